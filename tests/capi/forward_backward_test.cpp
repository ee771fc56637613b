// SPDX-License-Identifier: BSD-3-Clause
// The C API end to end: every layout, both masks, every dtype, GQA, on 1-4 ranks; each rank's
// shard of out, lse, dq, dk, dv is compared with the float64 reference on the whole sequence.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "capi_reference.hpp"
#include "capi_test_support.hpp"
#include "rfa/rfa_mpi.h"

namespace {

using namespace rfa_capi_test;

struct Case {
  rfa_layout_t layout;
  rfa_mask_t mask;
  rfa_dtype_t dtype;
  rfa_strategy_t strategy;
  bool documents = false;  ///< packed documents (lengths 1 and up, crossing ranks' rows)
};

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  const char* layouts[] = {"contiguous", "zigzag", "stripe"};
  const char* dtypes[] = {"fp32", "bf16", "fp16"};
  const char* strategies[] = {"", "_ulysses", "_allgather", "_hybrid", "_auto", "_needed"};
  return std::string(layouts[info.param.layout]) + (info.param.mask == RFA_MASK_CAUSAL ? "_causal_" : "_full_") +
         dtypes[info.param.dtype] + strategies[info.param.strategy] + (info.param.documents ? "_documents" : "");
}

/// The Ulysses degree each strategy is tested with on P ranks: the 2 x 2 grid on four ranks
/// for the hybrid (a single group on fewer), all ranks for Ulysses, none otherwise.
int32_t tested_degree(rfa_strategy_t strategy, int P) {
  if (strategy == RFA_STRATEGY_HYBRID) return P == 4 ? 2 : P;
  return 0;
}

// Absolute tolerances for values of order one. fp32 keeps all partials in fp32, so its
// error is round-off only; 16-bit outputs are limited by their own rounding of the result.
double tolerance(rfa_dtype_t t) { return t == RFA_DTYPE_FLOAT32 ? 2e-6 : t == RFA_DTYPE_BFLOAT16 ? 8e-3 : 1e-3; }

class CapiForwardBackward : public ::testing::TestWithParam<Case> {};

TEST_P(CapiForwardBackward, MatchesFloat64Reference) {
  const Case c = GetParam();
  const int P = world_size();
  // L = 10 (zigzag needs S % 2P == 0); Ulysses needs H % P == 0 (on 3 ranks each rank's 2 query
  // heads straddle the 2 K/V heads unevenly).
  const int64_t B = 2, H = P == 3 ? 6 : 4, Hkv = 2, D = 16, S = 2 * P * 5;

  rfa_options_t o;
  ASSERT_RFA_OK(rfa_options_init(&o));
  o.layout = c.layout;
  o.mask = c.mask;
  o.dtype = c.dtype;
  o.ring_order = RFA_RING_ORDER_IDENTITY;
  o.batch = B;
  o.seq_total = S;
  o.heads = H;
  o.kv_heads = Hkv;
  o.head_dim = D;
  o.strategy = c.strategy;
  o.ulysses_degree = tested_degree(c.strategy, P);
  const std::vector<int64_t> bounds = {0, 1, S / 3, S - 2, S};
  // The caller's array lives only until the context is created: the context keeps a copy.
  auto callers_array = std::make_unique<std::vector<int64_t>>(bounds);
  if (c.documents) {
    o.doc_boundaries = callers_array->data();
    o.doc_boundary_count = int64_t(callers_array->size());
  }
  rfa_context_t ctx = nullptr;
  ASSERT_RFA_OK(rfa_context_create(MPI_COMM_WORLD, &o, &ctx));
  std::fill(callers_array->begin(), callers_array->end(), int64_t(-7));
  callers_array.reset();
  if (c.documents) {
    rfa_options_t kept;
    ASSERT_RFA_OK(rfa_options_init(&kept));
    ASSERT_RFA_OK(rfa_context_get_options(ctx, &kept));
    ASSERT_EQ(kept.doc_boundary_count, int64_t(bounds.size()));
    EXPECT_EQ(std::vector<int64_t>(kept.doc_boundaries, kept.doc_boundaries + kept.doc_boundary_count), bounds);
  }

  int64_t L = 0;
  int position = -1, ranks = 0;
  ASSERT_RFA_OK(rfa_context_get_local_seq(ctx, &L));
  ASSERT_RFA_OK(rfa_context_get_position(ctx, &position));
  ASSERT_RFA_OK(rfa_context_get_ranks(ctx, &ranks));
  ASSERT_EQ(L, S / P);
  ASSERT_EQ(ranks, P);
  ASSERT_EQ(position, world_rank());  // identity order
  std::vector<int64_t> positions(std::size_t(L), -1);
  ASSERT_RFA_OK(rfa_context_get_local_positions(ctx, positions.data(), L));

  // Global inputs, the same on every rank, rounded to the dtype; the reference sees the rounded values.
  const ReferenceRun ref(o, c.documents ? bounds : std::vector<int64_t>(), 11);

  // This rank's shards, cut by the library's own helpers.
  LocalShards shards(o, L);
  auto& [lq, lk, lv, ldo, lout, ldq, ldk, ldv] = shards;
  ASSERT_RFA_OK(shards.scatter(ctx, ref, o));
  std::vector<float> lse(std::size_t(B * H * L));
  const double tol = tolerance(c.dtype);
  // Three rounds: the first allocates the workspace, the later ones run in the buffers the
  // context kept (the backward's filled by the forward before it, and the other way round).
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    std::fill(lse.begin(), lse.end(), std::numeric_limits<float>::quiet_NaN());
    lout.poison();
    ldq.poison();
    ldk.poison();
    ldv.poison();

    ASSERT_RFA_OK(rfa_forward(ctx, lq.data(), lk.data(), lv.data(), lout.data(), lse.data()));
    EXPECT_LE(max_error_bshd(lout, ref.out, positions, B, S, H, D), tol);
    const double lse_err = max_error_lse(lse, ref.lse, positions, B, H, S);
    EXPECT_LE(lse_err, 2e-6);  // lse is fp32 whatever the storage dtype
    std::vector<double> out_of_forward(lout.size());
    for (std::size_t i = 0; i < lout.size(); ++i) out_of_forward[i] = lout.get(i);

    ASSERT_RFA_OK(rfa_backward(ctx, lq.data(), lk.data(), lv.data(), lout.data(), ldo.data(), lse.data(), ldq.data(),
                               ldk.data(), ldv.data()));
    // Gradients grow with the sequence (sums over rows); scale the tolerance by it.
    const double gtol = tol * 4.0;
    const double out_err = max_error_bshd(lout, ref.out, positions, B, S, H, D);
    // out is the backward's input: read, never written.
    std::size_t out_changed = 0;
    for (std::size_t i = 0; i < lout.size(); ++i) out_changed += lout.get(i) != out_of_forward[i];
    EXPECT_EQ(out_changed, 0u) << "values of out the backward changed";
    const double dq_err = max_error_bshd(ldq, ref.dq, positions, B, S, H, D);
    const double dk_err = max_error_bshd(ldk, ref.dk, positions, B, S, Hkv, D);
    const double dv_err = max_error_bshd(ldv, ref.dv, positions, B, S, Hkv, D);
    EXPECT_LE(dq_err, gtol);
    EXPECT_LE(dk_err, gtol);
    EXPECT_LE(dv_err, gtol);
    if (world_rank() == 0 && round == 0) {
      std::printf("  P=%d max |error| out %.2e lse %.2e dq %.2e dk %.2e dv %.2e (tolerance %.0e, gradients %.0e)\n", P,
                  out_err, lse_err, dq_err, dk_err, dv_err, tol, gtol);
    }
  }
  // The kept workspace given back, once.
  int64_t released = -1;
  ASSERT_RFA_OK(rfa_context_release_workspace(ctx, &released));
  EXPECT_GT(released, 0);
  ASSERT_RFA_OK(rfa_context_release_workspace(ctx, &released));
  EXPECT_EQ(released, 0);
  ASSERT_RFA_OK(rfa_context_release_workspace(ctx, nullptr));

  // The all-gather helper reassembles the whole output on every rank.
  Stored gout(c.dtype, B * S * H * D);
  gout.poison();
  ASSERT_RFA_OK(rfa_allgather_bshd(ctx, H, lout.data(), gout.data()));
  std::vector<int64_t> all_rows(static_cast<std::size_t>(S));
  for (int64_t s = 0; s < S; ++s) all_rows[std::size_t(s)] = s;
  EXPECT_LE(max_error_bshd(gout, ref.out, all_rows, B, S, H, D), tol);

  ASSERT_RFA_OK(rfa_context_destroy(ctx));
}

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (rfa_layout_t l : {RFA_LAYOUT_CONTIGUOUS, RFA_LAYOUT_ZIGZAG, RFA_LAYOUT_STRIPE})
    for (rfa_mask_t m : {RFA_MASK_NONE, RFA_MASK_CAUSAL})
      for (rfa_dtype_t t : {RFA_DTYPE_FLOAT32, RFA_DTYPE_BFLOAT16, RFA_DTYPE_FLOAT16})
        cases.push_back({l, m, t, RFA_STRATEGY_RING});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(AllLayoutsMasksDtypes, CapiForwardBackward, ::testing::ValuesIn(all_cases()), case_name);

// The other strategies through options.strategy (the engine tests cover every dtype and GQA
// case; here the C API's wiring: shards from the context, the same results).
std::vector<Case> strategy_cases() {
  std::vector<Case> cases;
  for (rfa_strategy_t st : {RFA_STRATEGY_ULYSSES, RFA_STRATEGY_ALLGATHER, RFA_STRATEGY_HYBRID, RFA_STRATEGY_NEEDED})
    for (rfa_layout_t l : {RFA_LAYOUT_CONTIGUOUS, RFA_LAYOUT_ZIGZAG, RFA_LAYOUT_STRIPE})
      cases.push_back({l, RFA_MASK_CAUSAL, st == RFA_STRATEGY_ALLGATHER ? RFA_DTYPE_BFLOAT16 : RFA_DTYPE_FLOAT32, st});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Strategies, CapiForwardBackward, ::testing::ValuesIn(strategy_cases()), case_name);

// Packed documents through options.doc_boundaries: every layout, both masks, fp32 and bf16,
// and every strategy.
std::vector<Case> document_cases() {
  std::vector<Case> cases;
  for (rfa_layout_t l : {RFA_LAYOUT_CONTIGUOUS, RFA_LAYOUT_ZIGZAG, RFA_LAYOUT_STRIPE})
    for (rfa_mask_t m : {RFA_MASK_NONE, RFA_MASK_CAUSAL})
      for (rfa_dtype_t t : {RFA_DTYPE_FLOAT32, RFA_DTYPE_BFLOAT16}) cases.push_back({l, m, t, RFA_STRATEGY_RING, true});
  for (rfa_strategy_t st : {RFA_STRATEGY_ULYSSES, RFA_STRATEGY_ALLGATHER, RFA_STRATEGY_HYBRID, RFA_STRATEGY_NEEDED})
    cases.push_back({RFA_LAYOUT_ZIGZAG, RFA_MASK_CAUSAL, RFA_DTYPE_FLOAT32, st, true});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Documents, CapiForwardBackward, ::testing::ValuesIn(document_cases()), case_name);

// RFA_STRATEGY_AUTO: whatever plan it picks (strategy, degree, layout), the shards follow the
// context and the results are the reference's.
std::vector<Case> auto_cases() {
  return {{RFA_LAYOUT_ZIGZAG, RFA_MASK_CAUSAL, RFA_DTYPE_FLOAT32, RFA_STRATEGY_AUTO},
          {RFA_LAYOUT_CONTIGUOUS, RFA_MASK_NONE, RFA_DTYPE_BFLOAT16, RFA_STRATEGY_AUTO},
          {RFA_LAYOUT_STRIPE, RFA_MASK_CAUSAL, RFA_DTYPE_FLOAT32, RFA_STRATEGY_AUTO, true}};
}

INSTANTIATE_TEST_SUITE_P(Automatic, CapiForwardBackward, ::testing::ValuesIn(auto_cases()), case_name);

// Scores of order 1e8 (q and k entries up to 2e4, d = 64): the backward recomputes each
// probability from the forward's lse, and the two rounded products of that size may leave its
// exponent above 0. A probability is at most 1, so |dv_j| <= sum_i |dout_i| for every key j and
// column, whatever the conditioning does to the values; every gradient is finite. The bound is
// summed over the whole sequence (every rank's dout), on each dtype the host computes, through
// the ring and Ulysses.
TEST(CapiLargeScores, GradientsKeepTheBoundOfProbabilitiesAtMostOne) {
  const int P = world_size();
  const int64_t B = 1, H = std::max(2, P), D = 64, L = 16, S = L * P;  // Ulysses: H % P == 0
  for (const rfa_dtype_t dtype : {RFA_DTYPE_FLOAT32, RFA_DTYPE_BFLOAT16, RFA_DTYPE_FLOAT16})
    for (const rfa_strategy_t strategy : {RFA_STRATEGY_RING, RFA_STRATEGY_ULYSSES}) {
      SCOPED_TRACE(::testing::Message() << "dtype " << dtype << ", strategy " << strategy);
      rfa_options_t o;
      ASSERT_RFA_OK(rfa_options_init(&o));
      o.dtype = dtype;
      o.mask = RFA_MASK_NONE;
      o.layout = RFA_LAYOUT_CONTIGUOUS;
      o.ring_order = RFA_RING_ORDER_IDENTITY;
      o.strategy = strategy;
      o.batch = B;
      o.seq_total = S;
      o.heads = H;
      o.kv_heads = H;
      o.head_dim = D;
      rfa_context_t ctx = nullptr;
      ASSERT_RFA_OK(rfa_context_create(MPI_COMM_WORLD, &o, &ctx));
      // Entries up to 2e4: fp16 holds them (65504).
      const std::size_t n = std::size_t(B * L * H * D);
      const std::uint64_t seed = 900 + 10 * std::uint64_t(world_rank());
      std::vector<double> big_q = random_values(n, seed), big_k = random_values(n, seed + 1);
      for (double& x : big_q) x *= 2e4;
      for (double& x : big_k) x *= 2e4;
      Stored q(dtype, n), k(dtype, n), v(dtype, n), dout(dtype, n), out(dtype, n), dq(dtype, n), dk(dtype, n),
          dv(dtype, n);
      q.assign(big_q);
      k.assign(big_k);
      v.assign(random_values(n, seed + 2));
      const std::vector<double> stored_dout = dout.assign(random_values(n, seed + 3));
      std::vector<float> lse(std::size_t(B * H * L));
      ASSERT_RFA_OK(rfa_forward(ctx, q.data(), k.data(), v.data(), out.data(), lse.data()));
      ASSERT_RFA_OK(rfa_backward(ctx, q.data(), k.data(), v.data(), out.data(), dout.data(), lse.data(), dq.data(),
                                 dk.data(), dv.data()));
      // sum_i |dout_i| over every query row of the sequence, per head and column.
      std::vector<double> bound(std::size_t(H * D), 0.0);
      for (int64_t i = 0; i < L; ++i)
        for (int64_t hx = 0; hx < H * D; ++hx)
          bound[std::size_t(hx)] += std::fabs(stored_dout[std::size_t(i * H * D + hx)]);
      MPI_Allreduce(MPI_IN_PLACE, bound.data(), int(bound.size()), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      const double slack = dtype == RFA_DTYPE_FLOAT32 ? 1e-5 : 1e-2;
      int beyond = 0, nonfinite = 0;
      double worst = 0.0;
      for (std::size_t e = 0; e < n; ++e) {
        const double g = dv.get(e), limit = bound[e % std::size_t(H * D)] * (1.0 + slack);
        if (!std::isfinite(g)) {
          ++nonfinite;
        } else if (std::fabs(g) > limit) {
          ++beyond;
          worst = std::max(worst, std::fabs(g) / limit);
        }
        nonfinite += std::isfinite(dq.get(e)) && std::isfinite(dk.get(e)) ? 0 : 1;
      }
      EXPECT_EQ(nonfinite, 0) << "gradient elements that are NaN or infinite";
      EXPECT_EQ(beyond, 0) << "dv elements beyond sum |dout|, the worst " << worst << " times it";
      ASSERT_RFA_OK(rfa_context_destroy(ctx));
    }
}

// The sharding helpers round-trip bitwise, lse included, and agree with rfa_layout_positions.
TEST(CapiSharding, ScatterGatherRoundTripAndPositions) {
  const int P = world_size();
  rfa_options_t o;
  ASSERT_RFA_OK(rfa_options_init(&o));
  o.layout = RFA_LAYOUT_ZIGZAG;
  o.dtype = RFA_DTYPE_FLOAT32;
  o.ring_order = RFA_RING_ORDER_IDENTITY;
  o.batch = 2;
  o.seq_total = 2 * P * 3;
  o.heads = 3;
  o.kv_heads = 1;
  o.head_dim = 8;
  rfa_context_t ctx = nullptr;
  ASSERT_RFA_OK(rfa_context_create(MPI_COMM_WORLD, &o, &ctx));
  int64_t L = 0;
  int position = 0;
  ASSERT_RFA_OK(rfa_context_get_local_seq(ctx, &L));
  ASSERT_RFA_OK(rfa_context_get_position(ctx, &position));

  std::vector<int64_t> from_context(static_cast<std::size_t>(L)), from_layout(static_cast<std::size_t>(L));
  ASSERT_RFA_OK(rfa_context_get_local_positions(ctx, from_context.data(), L));
  ASSERT_RFA_OK(rfa_layout_positions(o.layout, o.seq_total, P, position, from_layout.data(), L));
  EXPECT_EQ(from_context, from_layout);
  int64_t L2 = 0;
  ASSERT_RFA_OK(rfa_layout_local_seq(o.layout, o.seq_total, P, &L2));
  EXPECT_EQ(L2, L);

  const auto values = random_values(std::size_t(o.batch * o.seq_total * o.heads * o.head_dim), 21);
  std::vector<float> global(values.begin(), values.end()), local(std::size_t(o.batch * L * o.heads * o.head_dim));
  std::vector<float> back(global.size(), -7.0f);
  ASSERT_RFA_OK(rfa_scatter_bshd(ctx, o.heads, global.data(), local.data()));
  ASSERT_RFA_OK(rfa_gather_bshd(ctx, o.heads, local.data(), back.data()));
  for (int64_t b = 0; b < o.batch; ++b)
    for (int64_t s = 0; s < o.seq_total; ++s) {
      const bool mine = std::find(from_context.begin(), from_context.end(), s) != from_context.end();
      for (int64_t e = 0; e < o.heads * o.head_dim; ++e) {
        const std::size_t idx = std::size_t((b * o.seq_total + s) * o.heads * o.head_dim + e);
        ASSERT_EQ(back[idx], mine ? global[idx] : -7.0f) << "b " << b << " s " << s;  // others untouched
      }
    }

  std::vector<float> glse(std::size_t(o.batch * o.heads * o.seq_total)),
      llse(static_cast<std::size_t>(o.batch * o.heads * L));
  for (std::size_t i = 0; i < glse.size(); ++i) glse[i] = float(i);
  std::vector<float> lse_back(glse.size(), -1.0f);
  ASSERT_RFA_OK(rfa_scatter_lse(ctx, glse.data(), llse.data()));
  ASSERT_RFA_OK(rfa_gather_lse(ctx, llse.data(), lse_back.data()));
  for (int64_t bh = 0; bh < o.batch * o.heads; ++bh)
    for (int64_t i = 0; i < L; ++i)
      EXPECT_EQ(llse[std::size_t(bh * L + i)], float(bh * o.seq_total + from_context[std::size_t(i)]));
  for (int64_t bh = 0; bh < o.batch * o.heads; ++bh)
    for (int64_t s = 0; s < o.seq_total; ++s) {
      const bool mine = std::find(from_context.begin(), from_context.end(), s) != from_context.end();
      const std::size_t idx = std::size_t(bh * o.seq_total + s);
      EXPECT_EQ(lse_back[idx], mine ? glse[idx] : -1.0f);
    }

  rfa_options_t back_opts;
  ASSERT_RFA_OK(rfa_options_init(&back_opts));
  ASSERT_RFA_OK(rfa_context_get_options(ctx, &back_opts));
  EXPECT_EQ(back_opts.seq_total, o.seq_total);
  EXPECT_EQ(back_opts.heads, o.heads);
  EXPECT_EQ(back_opts.layout, o.layout);
  ASSERT_RFA_OK(rfa_context_destroy(ctx));
}

}  // namespace
