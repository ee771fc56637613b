// SPDX-License-Identifier: BSD-3-Clause
// The Ulysses schedule (engine/ulysses_attention.hpp): all-to-all, one local attention,
// all-to-all back, over the same two seams as the ring (docs/architecture.md §8).
#include "engine/ulysses_attention.hpp"

#include <type_traits>

#include "engine/head_exchange.hpp"
#include "engine/strategy_checks.hpp"
#include "engine/strategy_instantiation.hpp"
#include "engine/workspace.hpp"
#include "kernels/contiguous_ops.hpp"
#include "layout/sequence_layout.hpp"

namespace rfa {
namespace engine {
namespace {

// The ring's validation (agreement, layout, kernel limits) first, so a bad config fails with
// the same messages under every strategy; the head split is then the same verdict everywhere.
const RingConfig& validated(comm::Communicator& comm, const RingConfig& c) {
  validate_collective(comm, c);
  return c;
}

}  // namespace

UlyssesAttention::UlyssesAttention(comm::Communicator& comm, const RingConfig& config)
    : comm_(comm), config_(validated(comm, config)), routing_(config.heads, config.kv_heads, comm.size()) {
  local_seq_ = layout::local_length(config_.layout, config_.seq_total, comm_.size());
}

PositionMap UlyssesAttention::local_positions() const {
  return layout::positions(config_.layout, config_.seq_total, comm_.size(), comm_.rank());
}

std::vector<PositionMap> UlyssesAttention::all_positions() const {
  std::vector<PositionMap> rows;
  for (int r = 0; r < comm_.size(); ++r)
    rows.push_back(layout::positions(config_.layout, config_.seq_total, comm_.size(), r));
  return rows;
}

kernels::AttentionParams UlyssesAttention::local_params() const {
  const RingConfig& c = config_;
  // The whole sequence in global order: one contiguous map for queries and keys, so the mask
  // applies exactly as in a single-device attention.
  kernels::AttentionParams p = kernels::make_params(c.batch, c.seq_total, c.seq_total, routing_.heads_per_rank(),
                                                    routing_.slots(), c.head_dim, c.mask, c.softmax_scale);
  apply_mask(c, p);
  return p;
}

std::int64_t UlyssesAttention::workspace_bytes(bool backward) const {
  const RingConfig& c = config_;
  const std::int64_t E = std::int64_t(dtype_size(c.dtype));
  const std::int64_t q = c.batch * local_seq_ * c.heads * c.head_dim;
  const std::int64_t kvs = c.batch * c.seq_total * routing_.slots() * c.head_dim;
  const std::int64_t kv_local = c.batch * local_seq_ * c.kv_heads * c.head_dim;
  const std::int64_t rows = c.batch * c.heads * local_seq_;
  if (!backward) return E * (2 * q + q + 2 * kvs + q) + 4 * 3 * rows + kernel_workspace_bytes(false);
  return E * (2 * q + 3 * q + 2 * kvs) + 4 * (q + 2 * kvs + 2 * grad_staging_elems() + 2 * kv_local + 4 * rows) +
         kernel_workspace_bytes(true);
}

std::int64_t UlyssesAttention::kernel_workspace_bytes(bool backward) const {
  const kernels::AttentionParams p = local_params();
  return backward ? kernels::flash_backward_workspace_bytes(p, config_.dtype)
                  : kernels::flash_forward_workspace_bytes(p, config_.dtype);
}

std::int64_t UlyssesAttention::grad_staging_elems() const {
  return HeadExchange(comm_, routing_, all_positions(), config_.batch, config_.head_dim).key_staging_elems();
}

template <class T>
void UlyssesAttention::forward(Tensor4<const T> q, Tensor4<const T> k, Tensor4<const T> v, Tensor4<T> out,
                               Tensor3<float> lse) {
  const RingConfig& c = config_;
  const std::int64_t L = local_seq_, B = c.batch, S = c.seq_total, D = c.head_dim;
  const std::int64_t hp = routing_.heads_per_rank();
  timings_ = RingTimings();
  ScopedSeconds total(timings_.total);

  Workspace<> ws;
  HeadExchange x(comm_, routing_, all_positions(), B, D);
  HeadShardedInputs<T> full(ws, x, c.heads);
  Staging<T>& stage = full.stage;
  Tensor4<T> q_full = full.q, k_full = full.k, v_full = full.v, out_full = full.out;
  Tensor3<float> lse_full = ws.tensor3<float>("rfa::ulysses_lse", B, hp, S);
  Staging<float> lse_stage(ws, "rfa::lse_send", "rfa::lse_recv", B * c.heads * L);
  kernels::ForwardWorkspace kernel_ws;  // made before the agreement, so a refusal fails every rank
  ws.adopt(kernel_workspace_bytes(false),
           [&] { kernels::reserve_forward_workspace(kernel_ws, local_params(), c.dtype); });
  last_workspace_bytes_ = ws.bytes();
  comm::check_everywhere(comm_, [&] {
    check_forward_tensors<T>(c, L, q, k, v, out, lse);
    ws.throw_if_failed();
  });

  {
    ScopedSeconds t(timings_.wait);
    timings_.bytes_sent += x.queries_to_heads<T>(q, q_full, stage.send.data(), stage.recv.data());
    timings_.bytes_sent += x.keys_to_heads<T>(k, k_full, stage.send.data(), stage.recv.data());
    timings_.bytes_sent += x.keys_to_heads<T>(v, v_full, stage.send.data(), stage.recv.data());
  }
  {
    ScopedSeconds t(timings_.compute);
    kernels::flash_forward<T, T>(local_params(), q_full, k_full, v_full, out_full, lse_full, kernels::ProgressHook(),
                                 &kernel_ws);
    timings_.steps_computed = 1;
  }
  ScopedSeconds t(timings_.wait);
  timings_.bytes_sent += x.queries_to_rows<T, T>(out_full, out, stage.send.data(), stage.recv.data());
  timings_.bytes_sent += x.lse_to_rows(lse_full, lse, lse_stage.send.data(), lse_stage.recv.data());
}

template <class T>
void UlyssesAttention::backward(Tensor4<const T> q, Tensor4<const T> k, Tensor4<const T> v, Tensor4<const T> out,
                                Tensor4<const T> dout, Tensor3<const float> lse, Tensor4<T> dq, Tensor4<T> dk,
                                Tensor4<T> dv) {
  const RingConfig& c = config_;
  const std::int64_t L = local_seq_, B = c.batch, S = c.seq_total, D = c.head_dim;
  const std::int64_t hp = routing_.heads_per_rank(), slots = routing_.slots();
  timings_ = RingTimings();
  ScopedSeconds total(timings_.total);

  Workspace<> ws;
  HeadExchange x(comm_, routing_, all_positions(), B, D);
  HeadShardedInputs<T> full(ws, x, c.heads);
  Staging<T>& stage = full.stage;
  Tensor4<T> q_full = full.q, k_full = full.k, v_full = full.v, out_full = full.out;
  Tensor4<T> dout_full = ws.tensor4<T>("rfa::ulysses_dout", B, S, hp, D);
  Tensor4<float> dq_full = ws.tensor4<float>("rfa::ulysses_dq", B, S, hp, D);
  Tensor4<float> dk_full = ws.tensor4<float>("rfa::ulysses_dk", B, S, slots, D);
  Tensor4<float> dv_full = ws.tensor4<float>("rfa::ulysses_dv", B, S, slots, D);
  // dK/dV travel in fp32: partials of a K/V head shared by several ranks are summed on arrival.
  Staging<float> grad_stage(ws, "rfa::grad_send", "rfa::grad_recv", grad_staging_elems());
  Tensor4<float> dk_acc = ws.tensor4<float>("rfa::dk_acc", B, L, c.kv_heads, D);
  Tensor4<float> dv_acc = ws.tensor4<float>("rfa::dv_acc", B, L, c.kv_heads, D);
  Tensor3<float> lse_full = ws.tensor3<float>("rfa::ulysses_lse", B, hp, S);
  Tensor3<float> delta = ws.tensor3<float>("rfa::delta", B, hp, S);
  Staging<float> lse_stage(ws, "rfa::lse_send", "rfa::lse_recv", B * c.heads * L);
  kernels::BackwardWorkspace kernel_ws;  // made before the agreement, so a refusal fails every rank
  ws.adopt(kernel_workspace_bytes(true),
           [&] { kernels::reserve_backward_workspace(kernel_ws, local_params(), c.dtype); });
  last_workspace_bytes_ = ws.bytes();
  comm::check_everywhere(comm_, [&] {
    check_backward_tensors<T>(c, L, q, k, v, out, dout, lse, dq, dk, dv);
    ws.throw_if_failed();
  });

  {
    ScopedSeconds t(timings_.wait);
    T* send = stage.send.data();
    T* recv = stage.recv.data();
    timings_.bytes_sent += x.queries_to_heads<T>(q, q_full, send, recv);
    timings_.bytes_sent += x.keys_to_heads<T>(k, k_full, send, recv);
    timings_.bytes_sent += x.keys_to_heads<T>(v, v_full, send, recv);
    timings_.bytes_sent += x.queries_to_heads<T>(out, out_full, send, recv);
    timings_.bytes_sent += x.queries_to_heads<T>(dout, dout_full, send, recv);
    // lse is read-only here; lse_to_heads only reads `local` through a non-const view type.
    Tensor3<float> lse_in(const_cast<float*>(lse.data()), B, c.heads, L);
    timings_.bytes_sent += x.lse_to_heads(lse_in, lse_full, lse_stage.send.data(), lse_stage.recv.data());
  }
  {
    ScopedSeconds t(timings_.compute);
    const kernels::AttentionParams p = local_params();
    kernels::fill_elements(dq_full, 0.0f);
    kernels::fill_elements(dk_full, 0.0f);
    kernels::fill_elements(dv_full, 0.0f);
    kernels::compute_delta<T, T>(p, dout_full, out_full, delta);
    kernels::flash_backward_accumulate<T>(p, q_full, k_full, v_full, dout_full, lse_full, delta, dq_full, dk_full,
                                          dv_full, kernels::ProgressHook(), &kernel_ws);
    timings_.steps_computed = 1;
  }
  ScopedSeconds t(timings_.wait);
  timings_.bytes_sent += x.queries_to_rows<float, T>(dq_full, dq, stage.send.data(), stage.recv.data());
  timings_.bytes_sent += x.keys_to_rows<float>(dk_full, dk_acc, grad_stage.send.data(), grad_stage.recv.data());
  timings_.bytes_sent += x.keys_to_rows<float>(dv_full, dv_acc, grad_stage.send.data(), grad_stage.recv.data());
  if constexpr (std::is_same<T, float>::value) {
    kernels::copy_elements(dk, dk_acc);
    kernels::copy_elements(dv, dv_acc);
  } else {
    kernels::narrow<T>(dk_acc, dk);
    kernels::narrow<T>(dv_acc, dv);
  }
}

RFA_INSTANTIATE_STRATEGY_PASSES(UlyssesAttention)

}  // namespace engine
}  // namespace rfa
