// SPDX-License-Identifier: BSD-3-Clause
// The whole problem of a C API test as every rank holds it before sharding: random inputs stored
// in the options' dtype, and the float64 reference's forward and backward on their rounded values.
// For the suites that link rfa_reference (tests/reference).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "capi_test_support.hpp"
#include "reference_attention.hpp"
#include "reference_over.hpp"

namespace rfa_capi_test {

/// The reference's form of the C API's mask ranges.
inline std::vector<rfa::reference::Range> reference_ranges(const std::vector<rfa_mask_range_t>& ranges) {
  std::vector<rfa::reference::Range> out;
  for (const rfa_mask_range_t& r : ranges)
    out.push_back({r.q_begin, r.q_end, r.k_begin, r.k_end, rfa::reference::Range::Kind(r.kind), r.band_lo, r.band_hi});
  return out;
}

/// The head dim of v, out, dout and dv for the options (value_head_dim, 0 meaning head_dim).
inline int64_t value_dim_of(const rfa_options_t& o) { return o.value_head_dim != 0 ? o.value_head_dim : o.head_dim; }

/// The reference's problem for the options: sizes, heads, head dims, mask, window, scale, soft cap, the
/// document boundaries given (the options' own pointer may not outlive the context's creation),
/// and with RFA_MASK_RANGES the ranges given.
inline rfa::reference::Problem reference_problem(const rfa_options_t& o, const std::vector<int64_t>& doc_bounds,
                                                 const std::vector<rfa_mask_range_t>& ranges = {}) {
  rfa::reference::Problem p;
  p.batch = o.batch;
  p.seq_q = p.seq_k = o.seq_total;
  p.heads = o.heads;
  p.kv_heads = o.kv_heads > 0 ? o.kv_heads : o.heads;
  p.head_dim = o.head_dim;
  p.value_dim = value_dim_of(o);
  p.scale = o.softmax_scale;
  p.causal = o.mask == RFA_MASK_CAUSAL;
  p.window = o.window;
  p.softcap = o.softcap;
  p.doc_bounds = doc_bounds;
  p.ranges_on = o.mask == RFA_MASK_RANGES;
  p.ranges = reference_ranges(ranges);
  return p;
}

/// Global q, k, v and dout (seeds seed..seed+3, the same on every rank) in the options' dtype, and
/// the reference's out, lse, dq, dk and dv on the values as stored; with `sinks` (one logit per
/// query head), the reference's softmax includes them and dsinks is their gradient. Collective:
/// every rank of MPI_COMM_WORLD constructs it at once, and they share the float64 work
/// (reference_over.hpp).
struct ReferenceRun {
  rfa::reference::Problem problem;
  Stored q, k, v, dout;
  std::vector<double> out, lse, dq, dk, dv, dsinks;

  /// `entry_docs`: per-sequence documents, batch entry b's boundaries (empty: one document), in
  /// place of `doc_bounds`; empty: doc_bounds serves every entry.
  ReferenceRun(const rfa_options_t& o, const std::vector<int64_t>& doc_bounds, std::uint64_t seed,
               const std::vector<float>& sinks = {}, const std::vector<rfa_mask_range_t>& ranges = {},
               const std::vector<std::vector<int64_t>>& entry_docs = {})
      : problem(with_entry_docs(with_sinks(reference_problem(o, doc_bounds, ranges), sinks), entry_docs)),
        q(o.dtype, std::size_t(problem.q_size())),
        k(o.dtype, std::size_t(problem.kv_size())),
        v(o.dtype, std::size_t(problem.v_size())),
        dout(o.dtype, std::size_t(problem.out_size())) {
    const auto rq = q.assign(random_values(q.size(), seed)), rk = k.assign(random_values(k.size(), seed + 1)),
               rv = v.assign(random_values(v.size(), seed + 2)),
               rdout = dout.assign(random_values(dout.size(), seed + 3));
    rfa::test::reference_over(MPI_COMM_WORLD, problem, rq, rk, rv, rdout, out, lse, dq, dk, dv,
                              sinks.empty() ? nullptr : &dsinks);
  }

 private:
  static rfa::reference::Problem with_sinks(rfa::reference::Problem p, const std::vector<float>& sinks) {
    p.sinks.assign(sinks.begin(), sinks.end());
    return p;
  }
  static rfa::reference::Problem with_entry_docs(rfa::reference::Problem p,
                                                 const std::vector<std::vector<int64_t>>& entry_docs) {
    p.entry_doc_bounds = entry_docs;
    return p;
  }
};

/// One rank's shards of a ReferenceRun's problem in the options' dtype, [B][L][heads][D] (v, dout,
/// out and dv [B][L][heads][value_dim_of(o)]): the inputs q, k, v, dout and the outputs out, dq,
/// dk, dv (members in that order, for structured bindings). scatter() cuts the inputs from the
/// reference's global tensors with the library's own helpers.
struct LocalShards {
  Stored q, k, v, dout, out, dq, dk, dv;

  LocalShards(const rfa_options_t& o, int64_t L)
      : q(o.dtype, std::size_t(o.batch * L * o.heads * o.head_dim)),
        k(o.dtype, std::size_t(o.batch * L * o.kv_heads * o.head_dim)),
        v(o.dtype, std::size_t(o.batch * L * o.kv_heads * value_dim_of(o))),
        dout(o.dtype, std::size_t(o.batch * L * o.heads * value_dim_of(o))),
        out(o.dtype, std::size_t(o.batch * L * o.heads * value_dim_of(o))),
        dq(o.dtype, std::size_t(o.batch * L * o.heads * o.head_dim)),
        dk(o.dtype, std::size_t(o.batch * L * o.kv_heads * o.head_dim)),
        dv(o.dtype, std::size_t(o.batch * L * o.kv_heads * value_dim_of(o))) {}

  /// rfa_scatter_bshd of q and k, and where the value head dim differs rfa_scatter_bshd_dim of v
  /// and dout, on `ctx`: RFA_SUCCESS or the first failure's code.
  rfa_result_t scatter(rfa_context_t ctx, const ReferenceRun& ref, const rfa_options_t& o) {
    const int64_t dv_dim = value_dim_of(o);
    const struct {
      int64_t heads, dim;
      const Stored& global;
      Stored& local;
    } parts[] = {{o.heads, o.head_dim, ref.q, q},
                 {o.kv_heads, o.head_dim, ref.k, k},
                 {o.kv_heads, dv_dim, ref.v, v},
                 {o.heads, dv_dim, ref.dout, dout}};
    for (const auto& p : parts) {
      const rfa_result_t r = p.dim == o.head_dim
                                 ? rfa_scatter_bshd(ctx, p.heads, p.global.data(), p.local.data())
                                 : rfa_scatter_bshd_dim(ctx, p.heads, p.dim, p.global.data(), p.local.data());
      if (r != RFA_SUCCESS) return r;
    }
    return RFA_SUCCESS;
  }
};

/// Scatters the reference's inputs to this rank, runs rfa_forward and rfa_backward on `ctx`
/// (made with options `o`; with `sinks`, the reference's, rfa_forward_with_sinks and
/// rfa_backward_with_sinks) and expects out, dq, dk and dv within `tol` of the reference's (the
/// gradients and the sinks' gradient within 4 tol) and lse within 4e-6, at this rank's positions.
inline void expect_forward_backward_match(rfa_context_t ctx, const rfa_options_t& o, const ReferenceRun& ref,
                                          double tol, const std::vector<float>& sinks = {}) {
  int64_t L = 0;
  ASSERT_EQ(rfa_context_get_local_seq(ctx, &L), RFA_SUCCESS) << rfa_get_last_error_message();
  std::vector<int64_t> positions(static_cast<std::size_t>(L));
  ASSERT_EQ(rfa_context_get_local_positions(ctx, positions.data(), L), RFA_SUCCESS);
  const int64_t B = o.batch, S = o.seq_total, H = o.heads, Hkv = o.kv_heads, D = o.head_dim, DV = value_dim_of(o);
  LocalShards shards(o, L);
  auto& [lq, lk, lv, ldo, lout, ldq, ldk, ldv] = shards;
  ASSERT_EQ(shards.scatter(ctx, ref, o), RFA_SUCCESS) << rfa_get_last_error_message();
  std::vector<float> lse(static_cast<std::size_t>(B * H * L)), dsinks(static_cast<std::size_t>(H));
  if (sinks.empty()) {
    ASSERT_EQ(rfa_forward(ctx, lq.data(), lk.data(), lv.data(), lout.data(), lse.data()), RFA_SUCCESS)
        << rfa_get_last_error_message();
    ASSERT_EQ(rfa_backward(ctx, lq.data(), lk.data(), lv.data(), lout.data(), ldo.data(), lse.data(), ldq.data(),
                           ldk.data(), ldv.data()),
              RFA_SUCCESS)
        << rfa_get_last_error_message();
  } else {
    ASSERT_EQ(rfa_forward_with_sinks(ctx, lq.data(), lk.data(), lv.data(), sinks.data(), lout.data(), lse.data()),
              RFA_SUCCESS)
        << rfa_get_last_error_message();
    ASSERT_EQ(rfa_backward_with_sinks(ctx, lq.data(), lk.data(), lv.data(), lout.data(), ldo.data(), lse.data(),
                                      sinks.data(), ldq.data(), ldk.data(), ldv.data(), dsinks.data()),
              RFA_SUCCESS)
        << rfa_get_last_error_message();
    for (int64_t h = 0; h < H; ++h)
      EXPECT_NEAR(dsinks[std::size_t(h)], ref.dsinks[std::size_t(h)],
                  4 * tol * (1 + std::fabs(ref.dsinks[std::size_t(h)])))
          << "the sink gradient of head " << h;
  }
  EXPECT_LE(max_error_bshd(lout, ref.out, positions, B, S, H, DV), tol);
  EXPECT_LE(max_error_lse(lse, ref.lse, positions, B, H, S), 4e-6);
  EXPECT_LE(max_error_bshd(ldq, ref.dq, positions, B, S, H, D), 4 * tol);
  EXPECT_LE(max_error_bshd(ldk, ref.dk, positions, B, S, Hkv, D), 4 * tol);
  EXPECT_LE(max_error_bshd(ldv, ref.dv, positions, B, S, Hkv, DV), 4 * tol);
}

}  // namespace rfa_capi_test
