// SPDX-License-Identifier: BSD-3-Clause
// A distributed test problem: every rank draws the same global inputs (same seed), keeps
// its shard, and computes the float64 reference on the whole sequence to compare its shard
// of the results with.
#pragma once

#include <gtest/gtest.h>
#include <mpi.h>

#include "mpi_test_support.hpp"

#include <memory>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "comm/mpi/mpi_communicator.hpp"
#include "engine/ring_attention.hpp"
#include "layout/sequence_layout.hpp"
#include "layout/shard_copy.hpp"
#include "reference_attention.hpp"
#include "reference_over.hpp"
#include "tensor_test_support.hpp"

namespace rfa {
namespace test {

using engine::Tensor3;
using engine::Tensor4;

/// The ring over MPI_COMM_WORLD in identity order.
inline std::unique_ptr<comm::Communicator> world_ring() {
  return comm::make_mpi_communicator(MPI_COMM_WORLD, world_rank());
}

/// Global inputs rounded to T, as doubles (the reference) and as T.
template <class T>
struct GlobalTensor {
  std::vector<T> stored;
  std::vector<double> exact;
  GlobalTensor(std::size_t n, std::mt19937_64& rng, double amplitude) : stored(n), exact(n) {
    std::uniform_real_distribution<double> dist(-amplitude, amplitude);
    for (std::size_t i = 0; i < n; ++i) {
      stored[i] = from_float<T>(float(dist(rng)));
      exact[i] = to_float(stored[i]);
    }
  }
};

/// A local shard, as a Kokkos view of T.
template <class T>
Tensor4<T> shard(const std::vector<T>& global, std::int64_t S, std::int64_t B, std::int64_t H, std::int64_t D,
                 const PositionMap& rows) {
  Tensor4<T> local("shard", B, rows.length(), H, D);
  layout::scatter_bshd(global.data(), S, layout::BshdDims{B, H, D}, rows, local.data());
  return local;
}

inline std::vector<double> shard_of(const std::vector<double>& global, std::int64_t S, std::int64_t B, std::int64_t H,
                                    std::int64_t D, const PositionMap& rows) {
  std::vector<double> local(std::size_t(B * rows.length() * H * D));
  layout::scatter_bshd(global.data(), S, layout::BshdDims{B, H, D}, rows, local.data());
  return local;
}

/// max |got - ref| / max(1e-2, max |ref|), with NaNs and unmatched infinities counted as +inf.
inline double relative_error(const std::vector<double>& got, const std::vector<double>& ref) {
  double err = 0.0, scale = 0.0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    if (std::isnan(got[i])) return INFINITY;
    if (std::isinf(ref[i]) || std::isinf(got[i])) {
      if (got[i] != ref[i]) return INFINITY;
      continue;
    }
    err = std::max(err, std::abs(got[i] - ref[i]));
    scale = std::max(scale, std::abs(ref[i]));
  }
  return err / std::max(1e-2, scale);
}

struct AttentionErrors {
  double out, lse, dq, dk, dv;
};

struct ReferenceResults {
  std::vector<double> out, lse, dq, dk, dv;
};

/// The float64 reference of `cfg` on the inputs run_attention draws from `seed` (below). The
/// last one is kept: a test that runs one problem through several configurations of a
/// strategy (the all-gather's chunk sizes) computes it once, where it was half of the test's
/// time under the sanitizers. The key is everything that decides the problem and the inputs.
/// With `shared`, every rank of MPI_COMM_WORLD is calling it now for the same problem (the
/// strategy spans the world), and they compute it together (reference_over.hpp).
template <class T>
const ReferenceResults& reference_results(const engine::AttentionConfig& cfg, std::uint64_t seed,
                                          const GlobalTensor<T>& q, const GlobalTensor<T>& k, const GlobalTensor<T>& v,
                                          const GlobalTensor<T>& dout, bool shared) {
  // (and T: each instantiation keeps its own)
  using Key =
      std::tuple<std::uint64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                 rfa_mask_t, std::int64_t, std::vector<std::int64_t>, std::vector<std::int64_t>, std::int64_t>;
  const Key key{seed,         cfg.batch,      cfg.seq_total,   cfg.heads,
                cfg.kv_heads, cfg.head_dim,   cfg.dv(),        cfg.mask,
                cfg.window,   cfg.doc_bounds, cfg.doc_offsets, cfg.ranges ? cfg.ranges->hash() : 0};
  static std::optional<Key> last_key;
  static ReferenceResults last;
  if (last_key == key) return last;
  reference::Problem prob;
  prob.batch = cfg.batch;
  prob.seq_q = prob.seq_k = cfg.seq_total;
  prob.heads = cfg.heads;
  prob.kv_heads = cfg.kv_heads;
  prob.head_dim = cfg.head_dim;
  prob.value_dim = cfg.value_dim;
  prob.causal = cfg.mask == RFA_MASK_CAUSAL;
  prob.window = cfg.window;
  prob.doc_bounds = cfg.doc_bounds;
  prob.entry_doc_bounds = reference::split_document_lists(cfg.doc_bounds, cfg.doc_offsets);  // per sequence
  if (cfg.ranges) {                                                                          // a mask given as ranges
    prob.ranges_on = true;
    for (const rfa_mask_range_t& r : cfg.ranges->entries())
      prob.ranges.push_back(
          {r.q_begin, r.q_end, r.k_begin, r.k_end, reference::Range::Kind(r.kind), r.band_lo, r.band_hi});
  }
  reference_over(shared ? MPI_COMM_WORLD : MPI_COMM_SELF, prob, q.exact, k.exact, v.exact, dout.exact, last.out,
                 last.lse, last.dq, last.dk, last.dv);
  last_key = key;
  return last;
}

/// Runs forward and backward of `cfg` on `attn` (any strategy: RingAttention, UlyssesAttention,
/// ...) and returns this rank's errors against the float64 reference. V, out, dout and dV are
/// cfg.dv() wide.
template <class T, class Engine>
AttentionErrors run_attention(Engine& attn, const engine::AttentionConfig& cfg, std::uint64_t seed) {
  const std::int64_t S = cfg.seq_total, B = cfg.batch, H = cfg.heads, HKV = cfg.kv_heads, D = cfg.head_dim;
  const std::int64_t DV = cfg.dv();
  std::mt19937_64 rng(seed);
  GlobalTensor<T> q(B * S * H * D, rng, 2.0), k(B * S * HKV * D, rng, 2.0), v(B * S * HKV * DV, rng, 1.0),
      dout(B * S * H * DV, rng, 1.0);

  const PositionMap rows = attn.local_positions();
  const std::int64_t L = attn.local_seq();
  auto q_l = shard(q.stored, S, B, H, D, rows), k_l = shard(k.stored, S, B, HKV, D, rows),
       v_l = shard(v.stored, S, B, HKV, DV, rows), dout_l = shard(dout.stored, S, B, H, DV, rows);
  Tensor4<T> out("out", B, L, H, DV), dq("dq", B, L, H, D), dk("dk", B, L, HKV, D), dv("dv", B, L, HKV, DV);
  Tensor3<float> lse("lse", B, H, L);
  poison(out);
  poison(lse);
  poison(dq);
  poison(dk);
  poison(dv);
  attn.forward(engine::HostForward<T>{q_l, k_l, v_l, out, lse});
  attn.backward(engine::HostBackward<T>{q_l, k_l, v_l, out, dout_l, lse, dq, dk, dv});

  // A strategy over every rank of the world is run by all of them at once: they share the reference.
  const ReferenceResults& ref = reference_results<T>(cfg, seed, q, k, v, dout, attn.ranks() == world_size());
  std::vector<double> lse_local(std::size_t(B * H * L));
  {
    std::vector<float> lse_ref32(ref.lse.begin(), ref.lse.end()), lse_loc32(lse_local.size());
    layout::scatter_bhs(lse_ref32.data(), S, B, H, rows, lse_loc32.data());
    lse_local.assign(lse_loc32.begin(), lse_loc32.end());
  }
  return AttentionErrors{relative_error(to_doubles(out), shard_of(ref.out, S, B, H, DV, rows)),
                         relative_error(to_doubles(lse), lse_local),
                         relative_error(to_doubles(dq), shard_of(ref.dq, S, B, H, D, rows)),
                         relative_error(to_doubles(dk), shard_of(ref.dk, S, B, HKV, D, rows)),
                         relative_error(to_doubles(dv), shard_of(ref.dv, S, B, HKV, DV, rows))};
}

/// The distance that moves a key into the next piece a rank holds when `layout` places S tokens
/// on n ranks (or ring groups): the contiguous block, the zigzag chunk, the stripe's period.
inline std::int64_t edge_of(rfa_layout_t layout, std::int64_t S, int n) {
  if (layout == RFA_LAYOUT_BALANCED) return S / (8 * std::int64_t(n));  // its chunks, wherever they go
  return layout == RFA_LAYOUT_CONTIGUOUS ? S / n : layout == RFA_LAYOUT_ZIGZAG ? S / (2 * n) : n;
}

/// The tolerances every strategy meets: the kernels' for out, fp32 accuracy for lse, twice the
/// kernels' for the gradients (they add one more rounding of partial sums), widened by
/// `gradient_slack` where a test says why.
template <class T>
bool within_tolerance(const AttentionErrors& e, double gradient_slack = 1.0) {
  const double tol = tolerance<T>(), grad = 2 * tol * gradient_slack;
  return e.out <= tol && e.lse <= 2e-5 && e.dq <= grad && e.dk <= grad && e.dv <= grad;
}

/// within_tolerance(), each quantity its own expectation.
template <class T>
void expect_matches_reference(const AttentionErrors& e) {
  const double tol = tolerance<T>();
  EXPECT_LE(e.out, tol) << "out";
  EXPECT_LE(e.lse, 2e-5) << "lse";
  EXPECT_LE(e.dq, 2 * tol) << "dq";
  EXPECT_LE(e.dk, 2 * tol) << "dk";
  EXPECT_LE(e.dv, 2 * tol) << "dv";
}

}  // namespace test
}  // namespace rfa
