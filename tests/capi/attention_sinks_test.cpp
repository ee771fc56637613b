// SPDX-License-Identifier: BSD-3-Clause
// Attention sinks through the C API (rfa_forward_with_sinks, rfa_backward_with_sinks): every
// strategy and layout, fp32 and 16-bit, GQA, windows and documents, on 1-8 ranks, against the
// float64 reference with the sinks in its softmax; the sink counted once whatever P (the same
// reference at every rank count); its gradient the same bits on every rank; the reference's own
// sink gradient against finite differences; and every refusal on every rank.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "capi_reference.hpp"
#include "capi_test_support.hpp"
#include "rfa/rfa_mpi.h"

namespace {

using namespace rfa_capi_test;

struct Case {
  rfa_strategy_t strategy;
  rfa_layout_t layout;
  rfa_dtype_t dtype;
  rfa_mask_t mask;
  int64_t window = 0;
  bool documents = false;
  bool per_sequence = false;  ///< with documents: entry 0 takes them, entry 1 is one document
  /// A mask given as ranges under which the later half of the queries sees no key: such a row
  /// is the sink alone (out 0, lse the sink, no gradient; with no sink, lse -inf).
  bool unseen_rows = false;
};

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  return case_label(c.strategy, c.layout, c.dtype, c.mask) + (c.window > 0 ? "_window" : "") +
         (c.documents ? "_documents" : "") + (c.per_sequence ? "_per_sequence" : "") +
         (c.unseen_rows ? "_unseen_rows" : "");
}

// Sinks of every kind: small, negative, dominant (most of each row's mass), absent (-inf).
std::vector<float> sink_values(int64_t heads) {
  const float kinds[] = {0.5f, -1.25f, 3.0f, -std::numeric_limits<float>::infinity(), 0.0f, 1.5f};
  std::vector<float> s(static_cast<std::size_t>(heads));
  for (int64_t h = 0; h < heads; ++h) s[std::size_t(h)] = kinds[h % 6];
  return s;
}

/// `bounds` and `offsets` (per-sequence documents) must outlive the context's creation.
rfa_options_t sink_options(const Case& c, int64_t H, const std::vector<int64_t>& bounds,
                           const std::vector<int64_t>& offsets = {}) {
  rfa_options_t o = variant_options(c.strategy, c.layout, c.dtype, c.mask, 5, 16);
  o.heads = H;
  o.window = c.window;
  if (c.documents) {
    o.doc_boundaries = bounds.data();
    o.doc_boundary_count = int64_t(bounds.size());
  }
  if (c.per_sequence) {
    o.doc_boundary_offsets = offsets.data();
    o.doc_boundary_offset_count = int64_t(offsets.size());
  }
  o.attention_sinks = 1;
  return o;
}

class CapiAttentionSinks : public ::testing::TestWithParam<Case> {};

TEST_P(CapiAttentionSinks, MatchFloat64ReferenceWithTheSinkCountedOnce) {
  const Case c = GetParam();
  const int P = world_size();
  // Heads divide among P Ulysses ranks and over the 2 K/V heads; at least 4 (every kind of sink).
  const int64_t H = variant_heads(P), Hkv = 2, D = 16, B = 2, S = variant_seq(c.layout, 5);
  const std::vector<int64_t> bounds = {0, 1, S / 3, S - 2, S};
  const std::vector<int64_t> offsets = {0, int64_t(bounds.size()), int64_t(bounds.size())};
  const std::vector<rfa_mask_range_t> ranges = {{0, S / 2, 0, S, 0, 0, RFA_RANGE_CAUSAL}};
  rfa_options_t o = sink_options(c, H, bounds, offsets);
  if (c.unseen_rows) {
    o.mask = RFA_MASK_RANGES;
    o.mask_ranges = ranges.data();
    o.mask_range_count = int64_t(ranges.size());
  }
  rfa_context_t ctx = nullptr;
  ASSERT_RFA_OK(rfa_context_create(MPI_COMM_WORLD, &o, &ctx));
  rfa_options_t kept;
  rfa_options_init(&kept);
  ASSERT_RFA_OK(rfa_context_get_options(ctx, &kept));
  EXPECT_EQ(kept.attention_sinks, 1);
  int64_t L = 0;
  ASSERT_RFA_OK(rfa_context_get_local_seq(ctx, &L));
  std::vector<int64_t> positions(static_cast<std::size_t>(L));
  ASSERT_RFA_OK(rfa_context_get_local_positions(ctx, positions.data(), L));

  // The reference: the rounded inputs, and the sinks in its softmax.
  const std::vector<float> sinks = sink_values(H);
  const std::vector<std::vector<int64_t>> entry_docs =
      c.per_sequence ? std::vector<std::vector<int64_t>>{bounds, {}} : std::vector<std::vector<int64_t>>();
  const ReferenceRun ref(o, c.documents ? bounds : std::vector<int64_t>(), 23, sinks,
                         c.unseen_rows ? ranges : std::vector<rfa_mask_range_t>(), entry_docs);
  const std::vector<double>& dsinks_ref = ref.dsinks;

  LocalShards shards(o, L);
  auto& [lq, lk, lv, ldo, lout, ldq, ldk, ldv] = shards;
  ASSERT_RFA_OK(shards.scatter(ctx, ref, o));
  std::vector<float> lse(static_cast<std::size_t>(B * H * L)), dsinks(static_cast<std::size_t>(H));
  const double tol = variant_tolerance(c.dtype), gtol = 4 * tol;
  for (int round = 0; round < 2; ++round) {  // the second in the buffers the context kept
    SCOPED_TRACE("round " + std::to_string(round));
    lout.poison();
    ldq.poison();
    std::fill(lse.begin(), lse.end(), std::numeric_limits<float>::quiet_NaN());
    std::fill(dsinks.begin(), dsinks.end(), std::numeric_limits<float>::quiet_NaN());
    ASSERT_RFA_OK(rfa_forward_with_sinks(ctx, lq.data(), lk.data(), lv.data(), sinks.data(), lout.data(), lse.data()));
    EXPECT_LE(max_error_bshd(lout, ref.out, positions, B, S, H, D), tol);
    const double lse_err = max_error_lse(lse, ref.lse, positions, B, H, S);
    EXPECT_LE(lse_err, 4e-6) << "lse must include the sink";

    ASSERT_RFA_OK(rfa_backward_with_sinks(ctx, lq.data(), lk.data(), lv.data(), lout.data(), ldo.data(), lse.data(),
                                          sinks.data(), ldq.data(), ldk.data(), ldv.data(), dsinks.data()));
    EXPECT_LE(max_error_bshd(ldq, ref.dq, positions, B, S, H, D), gtol);
    EXPECT_LE(max_error_bshd(ldk, ref.dk, positions, B, S, Hkv, D), gtol);
    EXPECT_LE(max_error_bshd(ldv, ref.dv, positions, B, S, Hkv, D), gtol);
    for (int64_t h = 0; h < H; ++h) {
      // A sum over every row of every rank: relative to its size.
      EXPECT_NEAR(dsinks[std::size_t(h)], dsinks_ref[std::size_t(h)],
                  gtol * (1 + std::fabs(dsinks_ref[std::size_t(h)])))
          << "head " << h;
      if (std::isinf(sinks[std::size_t(h)])) {
        EXPECT_EQ(dsinks[std::size_t(h)], 0.0f) << "no sink, no gradient";
      }
    }
    // The same bits on every rank.
    std::vector<float> first(dsinks);
    MPI_Bcast(first.data(), int(H), MPI_FLOAT, 0, MPI_COMM_WORLD);
    EXPECT_EQ(std::memcmp(first.data(), dsinks.data(), dsinks.size() * sizeof(float)), 0)
        << "the sinks' gradient differs between ranks";
  }
  ASSERT_RFA_OK(rfa_context_destroy(ctx));
}

std::vector<Case> cases() {
  std::vector<Case> all;
  for (rfa_layout_t layout : {RFA_LAYOUT_CONTIGUOUS, RFA_LAYOUT_ZIGZAG, RFA_LAYOUT_STRIPE})
    for (rfa_mask_t mask : {RFA_MASK_CAUSAL, RFA_MASK_NONE})
      all.push_back({RFA_STRATEGY_RING, layout, RFA_DTYPE_FLOAT32, mask});
  for (rfa_strategy_t s : {RFA_STRATEGY_ULYSSES, RFA_STRATEGY_ALLGATHER, RFA_STRATEGY_HYBRID, RFA_STRATEGY_NEEDED}) {
    all.push_back({s, RFA_LAYOUT_ZIGZAG, RFA_DTYPE_FLOAT32, RFA_MASK_CAUSAL});
    all.push_back({s, RFA_LAYOUT_CONTIGUOUS, RFA_DTYPE_BFLOAT16, RFA_MASK_NONE, 7});
  }
  all.push_back({RFA_STRATEGY_RING, RFA_LAYOUT_ZIGZAG, RFA_DTYPE_BFLOAT16, RFA_MASK_CAUSAL});
  all.push_back({RFA_STRATEGY_RING, RFA_LAYOUT_STRIPE, RFA_DTYPE_FLOAT16, RFA_MASK_CAUSAL, 5});
  all.push_back({RFA_STRATEGY_RING, RFA_LAYOUT_CONTIGUOUS, RFA_DTYPE_FLOAT32, RFA_MASK_CAUSAL, 6, true});
  all.push_back({RFA_STRATEGY_HYBRID, RFA_LAYOUT_ZIGZAG, RFA_DTYPE_FLOAT32, RFA_MASK_NONE, 0, true});
  // The balanced layout: a rank's rows in chunks scattered over the sequence.
  all.push_back({RFA_STRATEGY_RING, RFA_LAYOUT_BALANCED, RFA_DTYPE_FLOAT32, RFA_MASK_CAUSAL, 0, true});
  all.push_back({RFA_STRATEGY_NEEDED, RFA_LAYOUT_BALANCED, RFA_DTYPE_BFLOAT16, RFA_MASK_CAUSAL, 7});
  // Per-sequence documents: the sink joins each row once whatever its entry's documents.
  all.push_back({RFA_STRATEGY_RING, RFA_LAYOUT_ZIGZAG, RFA_DTYPE_FLOAT32, RFA_MASK_CAUSAL, 0, true, true});
  all.push_back({RFA_STRATEGY_ULYSSES, RFA_LAYOUT_STRIPE, RFA_DTYPE_BFLOAT16, RFA_MASK_NONE, 5, true, true});
  // Rows that see no key: the sink is all their softmax has.
  all.push_back({RFA_STRATEGY_RING, RFA_LAYOUT_ZIGZAG, RFA_DTYPE_FLOAT32, RFA_MASK_RANGES, 0, false, false, true});
  all.push_back(
      {RFA_STRATEGY_ALLGATHER, RFA_LAYOUT_CONTIGUOUS, RFA_DTYPE_BFLOAT16, RFA_MASK_RANGES, 0, false, false, true});
  return all;
}

INSTANTIATE_TEST_SUITE_P(Variants, CapiAttentionSinks, ::testing::ValuesIn(cases()), case_name);

// The reference's sink gradient against central differences of loss = sum(dout * out), so that
// the C API is not checked against a formula that is wrong in the same way.
TEST(ReferenceSinks, GradientMatchesFiniteDifferences) {
  rfa::reference::Problem p;
  p.batch = 2;
  p.seq_q = p.seq_k = 7;
  p.heads = 3;
  p.kv_heads = 1;
  p.head_dim = 4;
  p.causal = true;
  p.window = 4;
  p.sinks = {0.3, -0.7, 1.9};
  const auto q = random_values(std::size_t(p.q_size()), 1), k = random_values(std::size_t(p.kv_size()), 2),
             v = random_values(std::size_t(p.kv_size()), 3), dout = random_values(std::size_t(p.q_size()), 4);
  auto loss = [&](const rfa::reference::Problem& pp) {
    std::vector<double> out, lse;
    rfa::reference::forward(pp, q, k, v, out, lse);
    double l = 0;
    for (std::size_t i = 0; i < out.size(); ++i) l += out[i] * dout[i];
    return l;
  };
  std::vector<double> dq, dk, dv, dsinks;
  rfa::reference::backward(p, q, k, v, dout, dq, dk, dv, &dsinks);
  const double eps = 1e-6;
  for (int64_t h = 0; h < p.heads; ++h) {
    rfa::reference::Problem up = p, down = p;
    up.sinks[std::size_t(h)] += eps;
    down.sinks[std::size_t(h)] -= eps;
    EXPECT_NEAR(dsinks[std::size_t(h)], (loss(up) - loss(down)) / (2 * eps), 1e-7) << "head " << h;
    EXPECT_NE(dsinks[std::size_t(h)], 0.0);
  }
  // And the sink's place in the softmax: a sink of -inf is no sink at all.
  rfa::reference::Problem none = p, minus_inf = p;
  none.sinks.clear();
  minus_inf.sinks.assign(3, -std::numeric_limits<double>::infinity());
  EXPECT_EQ(loss(none), loss(minus_inf));
}

class CapiAttentionSinkRefusals : public ::testing::Test {
 protected:
  void SetUp() override {
    Case c{RFA_STRATEGY_RING, RFA_LAYOUT_ZIGZAG, RFA_DTYPE_FLOAT32, RFA_MASK_CAUSAL};
    const std::vector<int64_t> none;
    o_ = sink_options(c, 4, none);
    ASSERT_RFA_OK(rfa_context_create(MPI_COMM_WORLD, &o_, &sinks_ctx_));
    rfa_options_t plain = o_;
    plain.attention_sinks = 0;
    ASSERT_RFA_OK(rfa_context_create(MPI_COMM_WORLD, &plain, &plain_ctx_));
    ASSERT_RFA_OK(rfa_context_get_local_seq(sinks_ctx_, &L_));
    const std::size_t n = std::size_t(o_.batch * L_ * o_.heads * o_.head_dim),
                      nkv = std::size_t(o_.batch * L_ * o_.kv_heads * o_.head_dim);
    q_ = random_values<float>(n, 5);
    k_ = random_values<float>(nkv, 6);
    v_ = random_values<float>(nkv, 7);
    out_.assign(n, 0.0f);
    lse_.assign(std::size_t(o_.batch * o_.heads * L_), 0.0f);
  }
  void TearDown() override {
    if (sinks_ctx_) {
      EXPECT_EQ(rfa_context_destroy(sinks_ctx_), RFA_SUCCESS);
    }
    if (plain_ctx_) {
      EXPECT_EQ(rfa_context_destroy(plain_ctx_), RFA_SUCCESS);
    }
  }
  rfa_result_t forward_with(rfa_context_t ctx, const float* sinks) {
    return rfa_forward_with_sinks(ctx, q_.data(), k_.data(), v_.data(), sinks, out_.data(), lse_.data());
  }
  rfa_options_t o_{};
  rfa_context_t sinks_ctx_ = nullptr, plain_ctx_ = nullptr;
  int64_t L_ = 0;
  std::vector<float> q_, k_, v_, out_, lse_;
  std::vector<float> sinks_ = {0.5f, -1.0f, 2.0f, 0.0f};
};

TEST_F(CapiAttentionSinkRefusals, EachCallOnlyOnItsKindOfContext) {
  EXPECT_RFA_FAILS(
      RFA_ERROR_INVALID_USAGE, rfa_forward(sinks_ctx_, q_.data(), k_.data(), v_.data(), out_.data(), lse_.data()),
      "rfa_forward: the context was created with options.attention_sinks set", "call rfa_forward_with_sinks");
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_USAGE, forward_with(plain_ctx_, sinks_.data()),
                   "rfa_forward_with_sinks: the context was created without attention sinks");
  std::vector<float> dq(out_.size()), dk(k_.size()), dv(v_.size()), dsinks(4);
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_USAGE,
                   rfa_backward(sinks_ctx_, q_.data(), k_.data(), v_.data(), out_.data(), out_.data(), lse_.data(),
                                dq.data(), dk.data(), dv.data()),
                   "rfa_backward: the context was created with options.attention_sinks set");
  // Refused on every rank before anything moved: both contexts still work.
  EXPECT_EQ(forward_with(sinks_ctx_, sinks_.data()), RFA_SUCCESS) << rfa_get_last_error_message();
  EXPECT_EQ(rfa_forward(plain_ctx_, q_.data(), k_.data(), v_.data(), out_.data(), lse_.data()), RFA_SUCCESS);
}

TEST_F(CapiAttentionSinkRefusals, BadSinksFailEveryRank) {
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, forward_with(sinks_ctx_, nullptr), "sinks is NULL");
  std::vector<float> bad = sinks_;
  bad[1] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, forward_with(sinks_ctx_, bad.data()), "sinks[1] is nan");
  bad[1] = std::numeric_limits<float>::infinity();
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, forward_with(sinks_ctx_, bad.data()), "sinks[1] is inf");
  // On one rank only: the others fail too, naming it.
  bad = sinks_;
  if (world_rank() == world_size() - 1) bad[2] = std::numeric_limits<float>::quiet_NaN();
  const rfa_result_t one = forward_with(sinks_ctx_, bad.data());
  EXPECT_EQ(one, RFA_ERROR_INVALID_ARGUMENT) << rfa_get_last_error_message();
  // The sinks overlapping an output.
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, forward_with(sinks_ctx_, lse_.data()), "overlap");
  EXPECT_EQ(forward_with(sinks_ctx_, sinks_.data()), RFA_SUCCESS) << rfa_get_last_error_message();
}

TEST_F(CapiAttentionSinkRefusals, SinksThatDifferBetweenRanksFailEveryRank) {
  if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
  std::vector<float> mine = sinks_;
  if (world_rank() == 1) mine[3] = 0.25f;
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_USAGE, forward_with(sinks_ctx_, mine.data()),
                   "the sink logits (hash of the values)");
  std::vector<float> dq(out_.size()), dk(k_.size()), dv(v_.size()), dsinks(4);
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_USAGE,
                   rfa_backward_with_sinks(sinks_ctx_, q_.data(), k_.data(), v_.data(), out_.data(), out_.data(),
                                           lse_.data(), mine.data(), dq.data(), dk.data(), dv.data(), dsinks.data()),
                   "the sink logits");
  EXPECT_EQ(forward_with(sinks_ctx_, sinks_.data()), RFA_SUCCESS) << rfa_get_last_error_message();
}

// A logit of -0 on some ranks and +0 on others is the same sink: the call runs, as with +0 everywhere.
TEST_F(CapiAttentionSinkRefusals, MinusZeroIsTheSameSinkAsZero) {
  ASSERT_EQ(sinks_[3], 0.0f);
  ASSERT_RFA_OK(forward_with(sinks_ctx_, sinks_.data()));
  const std::vector<float> out_plus = out_, lse_plus = lse_;
  std::vector<float> mine = sinks_;
  if (world_rank() % 2 == 1) mine[3] = -0.0f;
  ASSERT_RFA_OK(forward_with(sinks_ctx_, mine.data()));
  EXPECT_EQ(out_, out_plus);
  EXPECT_EQ(lse_, lse_plus);
}

}  // namespace
