// SPDX-License-Identifier: BSD-3-Clause
#include "reference_check.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "check_reductions.hpp"
#include "core/error.hpp"
#include "engine/attention_config.hpp"
#include "ring_problem.hpp"

namespace rfa {
namespace perf {
namespace {

using kernels::Tensor3;
using kernels::Tensor4;

/// ErrorAndScale over n entries.
template <class A>
std::pair<double, double> diff(const A* got, const float* ref, std::size_t n) {
  ErrorAndScale d;
  for (std::size_t i = 0; i < n; ++i) d.add(to_float(got[i]), ref[i]);
  return d.pair();
}

}  // namespace

template <class T>
CheckErrors check_against_single_rank(comm::Communicator& ring, const engine::AttentionConfig& cfg,
                                      const PositionMap& mine, Tensor4<const T> out, Tensor3<const float> lse,
                                      Tensor4<const T> dq, Tensor4<const T> dk, Tensor4<const T> dv,
                                      const std::vector<float>& sinks, const std::vector<double>& dsinks) {
  const std::int64_t B = cfg.batch, S = cfg.seq_total, H = cfg.heads, HKV = cfg.kv_heads, D = cfg.head_dim;
  const std::int64_t DV = cfg.dv();
  const PositionMap all = PositionMap::contiguous(0, S);
  const std::int64_t L = mine.length();

  Tensor4<float> q_all("q_all", B, S, H, D), k_all("k_all", B, S, HKV, D), v_all("v_all", B, S, HKV, DV),
      dout_all("dout_all", B, S, H, DV);
  fill_as_float<T>(q_all, TensorId::q, all);
  fill_as_float<T>(k_all, TensorId::k, all);
  fill_as_float<T>(v_all, TensorId::v, all);
  fill_as_float<T>(dout_all, TensorId::dout, all);
  Tensor4<float> q_mine("q_mine", B, L, H, D), k_mine("k_mine", B, L, HKV, D), v_mine("v_mine", B, L, HKV, DV),
      dout_mine("dout_mine", B, L, H, DV);
  fill_as_float<T>(q_mine, TensorId::q, mine);
  fill_as_float<T>(k_mine, TensorId::k, mine);
  fill_as_float<T>(v_mine, TensorId::v, mine);
  fill_as_float<T>(dout_mine, TensorId::dout, mine);

  // Forward of this rank's queries against the whole sequence.
  kernels::AttentionParams mine_vs_all = kernels::make_params(B, L, S, H, HKV, D, cfg.mask, cfg.softmax_scale);
  engine::apply_config(cfg, mine_vs_all);  // the window, the soft cap, V's head dim: what every block gets
  mine_vs_all.q_pos = mine;
  Tensor4<float> out_ref("out_ref", B, L, H, DV);
  Tensor3<float> lse_ref("lse_ref", B, H, L);
  kernels::flash_forward<float, float>(mine_vs_all, q_mine, k_all, v_all, out_ref, lse_ref);
  // The sinks join the finished rows (the backward below then runs on out' and lse', as rfa's).
  if (!sinks.empty()) {
    engine::apply_sinks<float, Kokkos::HostSpace>(Kokkos::DefaultHostExecutionSpace(), sinks.data(), out_ref, lse_ref);
  }

  // D and lse of every query, for the dK/dV of this rank's keys.
  Tensor3<float> delta_ref("delta_ref", B, H, L);
  kernels::compute_delta<float, float>(mine_vs_all, dout_mine, out_ref, delta_ref);
  Tensor3<float> lse_all("lse_all", B, H, S), delta_all("delta_all", B, H, S);
  allgather_by_position(ring, mine, lse_ref.data(), B, H, lse_all.data(), S);
  allgather_by_position(ring, mine, delta_ref.data(), B, H, delta_all.data(), S);

  Tensor4<float> dq_ref("dq_ref", B, L, H, D), dk_unused("dk_unused", B, S, HKV, D),
      dv_unused("dv_unused", B, S, HKV, DV);
  kernels::flash_backward_accumulate<float>(mine_vs_all, q_mine, k_all, v_all, dout_mine, lse_ref, delta_ref, dq_ref,
                                            dk_unused, dv_unused);
  kernels::AttentionParams all_vs_mine = kernels::make_params(B, S, L, H, HKV, D, cfg.mask, cfg.softmax_scale);
  engine::apply_config(cfg, all_vs_mine);
  all_vs_mine.k_pos = mine;
  Tensor4<float> dq_unused("dq_unused", B, S, H, D), dk_ref("dk_ref", B, L, HKV, D), dv_ref("dv_ref", B, L, HKV, DV);
  kernels::flash_backward_accumulate<float>(all_vs_mine, q_all, k_mine, v_mine, dout_all, lse_all, delta_all, dq_unused,
                                            dk_ref, dv_ref);

  CheckErrors e;
  if (!sinks.empty()) {
    const std::vector<double> ref = comm::sum_in_rank_order(
        ring, engine::sink_gradient_part<float, Kokkos::HostSpace>(Kokkos::DefaultHostExecutionSpace(), sinks.data(),
                                                                   out_ref, dout_mine, lse_ref));
    ErrorAndScale d;
    for (std::size_t h = 0; h < ref.size(); ++h) d.add(h < dsinks.size() ? dsinks[h] : NAN, ref[h]);
    e.dsinks = relative_everywhere(ring, d.pair());
  }
  e.out = relative_everywhere(ring, diff(out.data(), out_ref.data(), out.size()));
  auto lse_diff = diff(lse.data(), lse_ref.data(), lse.size());
  lse_diff.second = 1.0;  // lse is compared in absolute terms
  e.lse = relative_everywhere(ring, lse_diff);
  e.dq = relative_everywhere(ring, diff(dq.data(), dq_ref.data(), dq.size()));
  e.dk = relative_everywhere(ring, diff(dk.data(), dk_ref.data(), dk.size()));
  e.dv = relative_everywhere(ring, diff(dv.data(), dv_ref.data(), dv.size()));
  return e;
}

#define RFA_INSTANTIATE_CHECK(T)                                                                                       \
  template CheckErrors check_against_single_rank<T>(                                                                   \
      comm::Communicator&, const engine::AttentionConfig&, const PositionMap&, Tensor4<const T>, Tensor3<const float>, \
      Tensor4<const T>, Tensor4<const T>, Tensor4<const T>, const std::vector<float>&, const std::vector<double>&);
RFA_INSTANTIATE_CHECK(float)
RFA_INSTANTIATE_CHECK(bf16_t)
RFA_INSTANTIATE_CHECK(fp16_t)

}  // namespace perf
}  // namespace rfa
