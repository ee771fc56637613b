// SPDX-License-Identifier: BSD-3-Clause
// Soft-capped scores through the C API (options.softcap): every strategy and layout, fp32 and
// 16-bit, GQA, windows, documents and attention sinks, on 1-8 ranks, forward and backward
// against the float64 reference with the cap in its scores; the cap bends the results well
// beyond the tolerance (so a cap left out is caught); bad caps refused on every rank.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
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
  double softcap;
  int64_t window = 0;
  bool documents = false;
  bool sinks = false;
};

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  return case_label(c.strategy, c.layout, c.dtype, c.mask) + "_cap" + std::to_string(int(c.softcap * 100)) +
         (c.window > 0 ? "_window" : "") + (c.documents ? "_documents" : "") + (c.sinks ? "_sinks" : "");
}

rfa_options_t cap_options(const Case& c, const std::vector<int64_t>& bounds) {
  rfa_options_t o = variant_options(c.strategy, c.layout, c.dtype, c.mask, 5, 16);
  // Scores of a few units (inputs in [-1, 1]): a cap of 0.5 or 1 bends most of them.
  o.softmax_scale = 0.75;
  o.softcap = c.softcap;
  o.window = c.window;
  if (c.documents) {
    o.doc_boundaries = bounds.data();
    o.doc_boundary_count = int64_t(bounds.size());
  }
  o.attention_sinks = c.sinks ? 1 : 0;
  return o;
}

class CapiSoftcap : public ::testing::TestWithParam<Case> {};

TEST_P(CapiSoftcap, MatchesFloat64ReferenceWithCappedScores) {
  const Case c = GetParam();
  const int P = world_size();
  const int64_t H = variant_heads(P), Hkv = 2, D = 16, B = 2, S = variant_seq(c.layout, 5);
  const std::vector<int64_t> bounds = {0, 1, S / 3, S - 2, S};
  const rfa_options_t o = cap_options(c, bounds);
  rfa_context_t ctx = nullptr;
  ASSERT_RFA_OK(rfa_context_create(MPI_COMM_WORLD, &o, &ctx));
  rfa_options_t kept;
  rfa_options_init(&kept);
  ASSERT_RFA_OK(rfa_context_get_options(ctx, &kept));
  EXPECT_EQ(kept.softcap, c.softcap);
  int64_t L = 0;
  ASSERT_RFA_OK(rfa_context_get_local_seq(ctx, &L));
  std::vector<int64_t> positions(static_cast<std::size_t>(L));
  ASSERT_RFA_OK(rfa_context_get_local_positions(ctx, positions.data(), L));

  const std::vector<int64_t> docs = c.documents ? bounds : std::vector<int64_t>();
  const std::vector<float> sinks = c.sinks ? std::vector<float>(std::size_t(H), 0.25f) : std::vector<float>();
  const ReferenceRun ref(o, docs, 41, sinks);
  // The same problem without the cap: the results must be far from it, or the test could not
  // tell a cap from none.
  rfa_options_t uncapped_options = o;
  uncapped_options.softcap = 0;
  const ReferenceRun uncapped(uncapped_options, docs, 41, sinks);

  LocalShards shards(o, L);
  auto& [lq, lk, lv, ldo, lout, ldq, ldk, ldv] = shards;
  ASSERT_RFA_OK(shards.scatter(ctx, ref, o));
  std::vector<float> lse(static_cast<std::size_t>(B * H * L)), dsinks(static_cast<std::size_t>(H));
  const double tol = variant_tolerance(c.dtype), gtol = 4 * tol;
  if (c.sinks) {
    ASSERT_RFA_OK(rfa_forward_with_sinks(ctx, lq.data(), lk.data(), lv.data(), sinks.data(), lout.data(), lse.data()));
    ASSERT_RFA_OK(rfa_backward_with_sinks(ctx, lq.data(), lk.data(), lv.data(), lout.data(), ldo.data(), lse.data(),
                                          sinks.data(), ldq.data(), ldk.data(), ldv.data(), dsinks.data()));
    for (int64_t h = 0; h < H; ++h)
      EXPECT_NEAR(dsinks[std::size_t(h)], ref.dsinks[std::size_t(h)],
                  gtol * (1 + std::fabs(ref.dsinks[std::size_t(h)])))
          << "head " << h;
  } else {
    ASSERT_RFA_OK(rfa_forward(ctx, lq.data(), lk.data(), lv.data(), lout.data(), lse.data()));
    ASSERT_RFA_OK(rfa_backward(ctx, lq.data(), lk.data(), lv.data(), lout.data(), ldo.data(), lse.data(), ldq.data(),
                               ldk.data(), ldv.data()));
  }
  EXPECT_LE(max_error_bshd(lout, ref.out, positions, B, S, H, D), tol);
  EXPECT_LE(max_error_lse(lse, ref.lse, positions, B, H, S), 4e-6);
  EXPECT_LE(max_error_bshd(ldq, ref.dq, positions, B, S, H, D), gtol);
  EXPECT_LE(max_error_bshd(ldk, ref.dk, positions, B, S, Hkv, D), gtol);
  EXPECT_LE(max_error_bshd(ldv, ref.dv, positions, B, S, Hkv, D), gtol);
  if (c.softcap <= 1.0) {  // within the tolerance of the capped result, and three times as far from the uncapped one
    EXPECT_GT(max_error_bshd(lout, uncapped.out, positions, B, S, H, D), 3 * tol) << "the cap changes the output";
    EXPECT_GT(max_error_bshd(ldq, uncapped.dq, positions, B, S, H, D), 3 * gtol) << "and the gradients";
  }
  ASSERT_RFA_OK(rfa_context_destroy(ctx));
}

std::vector<Case> cases() {
  std::vector<Case> all;
  for (rfa_layout_t layout : {RFA_LAYOUT_CONTIGUOUS, RFA_LAYOUT_ZIGZAG, RFA_LAYOUT_STRIPE})
    for (rfa_mask_t mask : {RFA_MASK_CAUSAL, RFA_MASK_NONE})
      all.push_back({RFA_STRATEGY_RING, layout, RFA_DTYPE_FLOAT32, mask, 0.5});
  for (rfa_strategy_t s : {RFA_STRATEGY_ULYSSES, RFA_STRATEGY_ALLGATHER, RFA_STRATEGY_HYBRID, RFA_STRATEGY_NEEDED}) {
    all.push_back({s, RFA_LAYOUT_ZIGZAG, RFA_DTYPE_FLOAT32, RFA_MASK_CAUSAL, 0.5});
    all.push_back({s, RFA_LAYOUT_CONTIGUOUS, RFA_DTYPE_BFLOAT16, RFA_MASK_NONE, 1.0, 7});
  }
  all.push_back({RFA_STRATEGY_RING, RFA_LAYOUT_ZIGZAG, RFA_DTYPE_BFLOAT16, RFA_MASK_CAUSAL, 1.0});
  all.push_back({RFA_STRATEGY_RING, RFA_LAYOUT_STRIPE, RFA_DTYPE_FLOAT16, RFA_MASK_CAUSAL, 0.5, 5});
  all.push_back({RFA_STRATEGY_RING, RFA_LAYOUT_CONTIGUOUS, RFA_DTYPE_FLOAT32, RFA_MASK_CAUSAL, 0.5, 6, true});
  all.push_back({RFA_STRATEGY_HYBRID, RFA_LAYOUT_ZIGZAG, RFA_DTYPE_FLOAT32, RFA_MASK_NONE, 1.0, 0, true});
  // The balanced layout: a rank's rows in chunks scattered over the sequence.
  all.push_back({RFA_STRATEGY_RING, RFA_LAYOUT_BALANCED, RFA_DTYPE_FLOAT32, RFA_MASK_CAUSAL, 0.5, 6, true});
  all.push_back({RFA_STRATEGY_ULYSSES, RFA_LAYOUT_BALANCED, RFA_DTYPE_BFLOAT16, RFA_MASK_CAUSAL, 1.0});
  // A cap far above every score: the results are the uncapped ones, to the kernels' precision.
  all.push_back({RFA_STRATEGY_RING, RFA_LAYOUT_ZIGZAG, RFA_DTYPE_FLOAT32, RFA_MASK_CAUSAL, 50.0});
  // With attention sinks: the sink joins the capped scores' denominator, its gradient too.
  all.push_back({RFA_STRATEGY_RING, RFA_LAYOUT_ZIGZAG, RFA_DTYPE_FLOAT32, RFA_MASK_CAUSAL, 0.5, 0, false, true});
  all.push_back({RFA_STRATEGY_ULYSSES, RFA_LAYOUT_STRIPE, RFA_DTYPE_BFLOAT16, RFA_MASK_NONE, 1.0, 5, false, true});
  return all;
}

INSTANTIATE_TEST_SUITE_P(Variants, CapiSoftcap, ::testing::ValuesIn(cases()), case_name);

// Scores far above the cap over whole key tiles and partial ones (no mask; blocks of 12 keys, a
// multiple of the kernels' micro-tile rows, where the kernels take each tile's max from the score
// products, and of 11 and 13, one either side, whose last tile is partial): q = k = 4 in every
// element and a scale of 1.5 give every score 192, capped at 1, so every key weighs the same:
// out is the mean of v over the sequence and lse is 1 + ln(S), exactly as far as fp32 goes. A
// max taken before the cap would leave every weight exp(1 - 192) = 0.
class CapiSoftcapLargeScores : public ::testing::TestWithParam<std::pair<rfa_layout_t, int64_t>> {};

TEST_P(CapiSoftcapLargeScores, TilesFarAboveTheCapWeighEveryKeyAlike) {
  rfa_options_t o = small_problem(GetParam().first, GetParam().second);
  o.mask = RFA_MASK_NONE;
  o.softmax_scale = 1.5;
  o.softcap = 1.0;
  rfa_context_t ctx = nullptr;
  ASSERT_RFA_OK(rfa_context_create(MPI_COMM_WORLD, &o, &ctx));
  int64_t L = 0;
  ASSERT_RFA_OK(rfa_context_get_local_seq(ctx, &L));
  std::vector<int64_t> positions(static_cast<std::size_t>(L));
  ASSERT_RFA_OK(rfa_context_get_local_positions(ctx, positions.data(), L));
  const int64_t B = o.batch, H = o.heads, Hkv = o.kv_heads, D = o.head_dim, S = o.seq_total;
  auto value = [](int64_t b, int64_t pos, int64_t g, int64_t x) {
    return 0.1 * double((pos * 7 + b + g) % 11) + 0.01 * x;
  };
  std::vector<float> q(std::size_t(B * L * H * D), 4.0f), k(std::size_t(B * L * Hkv * D), 4.0f),
      v(std::size_t(B * L * Hkv * D)), out(q.size()), lse(std::size_t(B * H * L));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < L; ++i)
      for (int64_t g = 0; g < Hkv; ++g)
        for (int64_t x = 0; x < D; ++x)
          v[std::size_t(((b * L + i) * Hkv + g) * D + x)] = float(value(b, positions[std::size_t(i)], g, x));
  ASSERT_RFA_OK(rfa_forward(ctx, q.data(), k.data(), v.data(), out.data(), lse.data()));
  double worst_out = 0, worst_lse = 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h) {
      const int64_t g = h / (H / Hkv);
      for (int64_t i = 0; i < L; ++i) {
        const float got_lse = lse[std::size_t((b * H + h) * L + i)];
        worst_lse =
            std::max(worst_lse, std::isfinite(got_lse) ? std::fabs(got_lse - (1.0 + std::log(double(S)))) : INFINITY);
        for (int64_t x = 0; x < D; ++x) {
          double mean = 0;
          for (int64_t pos = 0; pos < S; ++pos) mean += value(b, pos, g, x) / double(S);
          const float got = out[std::size_t(((b * L + i) * H + h) * D + x)];
          worst_out = std::max(worst_out, std::isfinite(got) ? std::fabs(got - mean) : INFINITY);
        }
      }
    }
  EXPECT_LE(worst_out, 2e-6);
  EXPECT_LE(worst_lse, 2e-6);
  ASSERT_RFA_OK(rfa_context_destroy(ctx));
}

INSTANTIATE_TEST_SUITE_P(KeysPerRank, CapiSoftcapLargeScores,
                         ::testing::Values(std::make_pair(RFA_LAYOUT_ZIGZAG, int64_t(12)),
                                           std::make_pair(RFA_LAYOUT_CONTIGUOUS, int64_t(11)),
                                           std::make_pair(RFA_LAYOUT_CONTIGUOUS, int64_t(13))));

// A cap must be 0 (none) or a positive value within fp32's range: anything else fails creation
// on every rank, and so does a cap given on one rank only.
TEST(CapiSoftcapRefusals, BadCapsFailCreationOnEveryRank) {
  const std::vector<int64_t> none;
  for (double bad :
       {-1.0, -1e-30, std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(), 1e39, 1e-50}) {
    rfa_options_t o =
        cap_options({RFA_STRATEGY_RING, RFA_LAYOUT_ZIGZAG, RFA_DTYPE_FLOAT32, RFA_MASK_CAUSAL, bad}, none);
    rfa_context_t ctx = nullptr;
    EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_context_create(MPI_COMM_WORLD, &o, &ctx), "options.softcap is");
    EXPECT_EQ(ctx, nullptr);
  }
  // Within fp32 but not in the log2 domain the kernels work in: softcap * log2(e) or scale /
  // softcap beyond fp32 (every row read as seeing no key: out 0, lse -inf). The bounds are taken.
  const double fits = double(std::numeric_limits<float>::max()) / 1.4426950408889634;
  for (const double cap : {2.5e38, 3e38, 1e-40}) {
    rfa_options_t o =
        cap_options({RFA_STRATEGY_RING, RFA_LAYOUT_ZIGZAG, RFA_DTYPE_FLOAT32, RFA_MASK_CAUSAL, cap}, none);
    rfa_context_t ctx = nullptr;
    EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_context_create(MPI_COMM_WORLD, &o, &ctx), "softcap",
                     "out of the kernels' range");
    EXPECT_EQ(ctx, nullptr);
  }
  for (const double scale : {2.5e38, 3e38}) {
    rfa_options_t o =
        cap_options({RFA_STRATEGY_RING, RFA_LAYOUT_ZIGZAG, RFA_DTYPE_FLOAT32, RFA_MASK_CAUSAL, 0.0}, none);
    o.softmax_scale = scale;
    rfa_context_t ctx = nullptr;
    EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_context_create(MPI_COMM_WORLD, &o, &ctx), "softmax_scale",
                     "too large");
    EXPECT_EQ(ctx, nullptr);
  }
  {
    rfa_options_t o =
        cap_options({RFA_STRATEGY_RING, RFA_LAYOUT_ZIGZAG, RFA_DTYPE_FLOAT32, RFA_MASK_CAUSAL, fits * 0.999}, none);
    o.softmax_scale = fits * 0.999;
    rfa_context_t ctx = nullptr;
    ASSERT_RFA_OK(rfa_context_create(MPI_COMM_WORLD, &o, &ctx));
    ASSERT_RFA_OK(rfa_context_destroy(ctx));
  }
  if (world_size() < 2) return;
  rfa_options_t o = cap_options({RFA_STRATEGY_RING, RFA_LAYOUT_ZIGZAG, RFA_DTYPE_FLOAT32, RFA_MASK_CAUSAL, 0.5}, none);
  if (world_rank() == 1) o.softcap = 0.75;
  rfa_context_t ctx = nullptr;
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_USAGE, rfa_context_create(MPI_COMM_WORLD, &o, &ctx), "softcap");
  EXPECT_EQ(ctx, nullptr);
}

}  // namespace
