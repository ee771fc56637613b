// SPDX-License-Identifier: BSD-3-Clause
// Two pieces of the CUDA kernels' per-row arithmetic compiled for the host
// (device_code_on_host.hpp), against float64: the forward's epilogue (row_epilogue.cuh), plain
// and merging into a running result as the ring's fused merge does, at lses near 0 and far from
// it (up to 2e38, and pairs further apart than fp32's range), rows that saw no key and NaN; and
// the soft cap (score_cap.cuh): tanh and its slope from one exponential, the slope in relative
// terms where tanh rounds to +-1, the forward's capped score the backward's. The weights of a
// merge must sum to 1 whatever the lses' size (taken from the rounded merged lse they would sum to
// 2 from 2^24 on).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

// The device headers after the stand-ins for CUDA's qualifiers.
#include "device_code_on_host.hpp"

#include "row_epilogue.cuh"
#include "score_cap.cuh"

namespace rfa_cuda {
namespace detail {
namespace {

constexpr double kLn2 = 0.69314718055994530942;
constexpr float kInf = std::numeric_limits<float>::infinity();

// A block's epilogue whose lse is `lse` (max 0 in the log2 domain, sum e^lse) merged into a
// running lse.
RowEpilogue merged(float running_lse, float block_lse, bool& merges) {
  RowEpilogue e{};
  // The block's lse is max ln2 + ln(sum): max = lse / ln2 and sum 1 give it within a rounding.
  merges = row_epilogue(true, 1.0f, float(double(block_lse) / kLn2), running_lse, e);
  return e;
}

TEST(RowEpilogue, PlainRowsAndRowsThatSawNoKey) {
  RowEpilogue e{};
  ASSERT_TRUE(row_epilogue(false, 4.0f, 3.0f, 0.0f, e));
  EXPECT_NEAR(e.lse, 3.0 * kLn2 + std::log(4.0), 1e-6);
  EXPECT_EQ(e.block, 0.25f);
  ASSERT_TRUE(row_epilogue(false, 0.0f, -kInf, 0.0f, e));
  EXPECT_EQ(e.lse, -kInf);
  EXPECT_EQ(e.block, 0.0f);
  // A NaN score makes the sum NaN while fmaxf left it out of the max: NaN, not "no key seen".
  ASSERT_TRUE(row_epilogue(false, std::nanf(""), 2.0f, 0.0f, e));
  EXPECT_TRUE(std::isnan(e.lse));
  EXPECT_TRUE(std::isnan(e.block));
  // Merging: a block with no key leaves the running values; a NaN block makes them NaN.
  EXPECT_FALSE(row_epilogue(true, 0.0f, -kInf, 5.0f, e));
  ASSERT_TRUE(row_epilogue(true, std::nanf(""), 2.0f, 5.0f, e));
  EXPECT_TRUE(std::isnan(e.lse) && std::isnan(e.running) && std::isnan(e.block));
  // A running row that had seen no key takes the block as it is.
  ASSERT_TRUE(row_epilogue(true, 2.0f, 1.0f, -kInf, e));
  EXPECT_NEAR(e.lse, kLn2 + std::log(2.0), 1e-6);
  EXPECT_EQ(e.running, 0.0f);
  EXPECT_EQ(e.block, 0.5f);
}

TEST(RowEpilogue, MergedWeightsAreTheSoftmaxOfTheTwoLsesAtAnySize) {
  std::mt19937 gen(5);
  std::uniform_real_distribution<float> apart(-20.0f, 20.0f);
  int checked = 0;
  for (const float size : {0.0f, 40.0f, -1e4f, 1e6f, 3e7f, 1e8f, -1e8f, 1e20f, 2e38f}) {
    for (int i = 0; i < 200; ++i) {
      const float running = size, block = i == 0 ? size : size + apart(gen);
      bool merges = false;
      const RowEpilogue e = merged(running, block, merges);
      ASSERT_TRUE(merges);
      // What the block's epilogue took as its lse (max ln2 + ln 1, rounded): the reference's input.
      RowEpilogue plain{};
      row_epilogue(false, 1.0f, float(double(block) / kLn2), 0.0f, plain);
      const double d = double(plain.lse) - double(running);
      const double w_block = 1.0 / (1.0 + std::exp(-d)), w_running = 1.0 - w_block;
      // e.block multiplies the block's accumulator over its sum (1 here): the block's weight.
      EXPECT_NEAR(e.block, w_block, 2e-7 + 1e-6 * w_block) << "lses " << running << " and " << plain.lse;
      EXPECT_NEAR(e.running, w_running, 2e-7 + 1e-6 * w_running) << "lses " << running << " and " << plain.lse;
      const double hi = std::max(double(running), double(plain.lse));
      const double lse = hi + std::log1p(std::exp(-std::fabs(d)));
      EXPECT_NEAR(e.lse, lse, 1e-6 * (1.0 + std::fabs(lse))) << "lses " << running << " and " << plain.lse;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 9 * 200);
  // Lses further apart than fp32's range: the larger keeps every weight, no overflow.
  bool merges = false;
  RowEpilogue e = merged(-2e38f, 2e38f, merges);
  EXPECT_EQ(e.running, 0.0f);
  EXPECT_EQ(e.block, 1.0f);
  EXPECT_NEAR(e.lse, 2e38, 1e32);
  e = merged(2e38f, -2e38f, merges);
  EXPECT_EQ(e.running, 1.0f);
  EXPECT_EQ(e.block, 0.0f);
  EXPECT_EQ(e.lse, 2e38f);
  // A NaN running lse stays NaN.
  e = merged(std::nanf(""), 1.0f, merges);
  EXPECT_TRUE(std::isnan(e.lse) && std::isnan(e.running) && std::isnan(e.block));
}

TEST(ScoreCapSlope, TanhAndItsSlopeFromOneExponential) {
  // scale 1, cap 1: the capped raw score is tanh(s), its slope 1 - tanh^2(s) = 1 / cosh^2(s).
  const ScoreCap cap{true, 1.0f, 1.0f};
  std::vector<float> xs;
  for (int i = -43 * 64; i <= 43 * 64; ++i) xs.push_back(float(i) / 64.0f);
  for (const float sign : {1.0f, -1.0f})
    for (const float x : {0.625f, std::nextafter(0.625f, 0.0f), std::nextafter(0.625f, 1.0f), 1e-6f, 1e-30f})
      xs.push_back(sign * x);
  for (const float s : xs) {
    float slope = 0.0f;
    const float capped = cap.apply(s, slope);
    const double t = std::tanh(double(s));
    EXPECT_NEAR(capped, t, 4e-7 * std::fabs(t)) << "s = " << s;
    const double c = std::cosh(double(s)), want = 1.0 / (c * c);
    // The exponential's error grows with its argument 2|s| log2 e (fp32's rounding of it).
    EXPECT_NEAR(slope, want, want * (1e-6 + 2e-7 * std::fabs(s))) << "s = " << s;
    EXPECT_EQ(cap.apply(s), capped) << "the forward's capped score differs from the backward's, s = " << s;
  }
  for (const float s : {-kInf, kInf}) {
    float slope = 1.0f;
    EXPECT_EQ(cap.apply(s, slope), s > 0 ? 1.0f : -1.0f);
    EXPECT_EQ(slope, 0.0f);
  }
  float slope = 0.0f;
  EXPECT_TRUE(std::isnan(cap.apply(std::nanf(""), slope)) && std::isnan(slope));
  const ScoreCap off{false, 0.0f, 0.0f};
  EXPECT_EQ(off.apply(7.0f, slope), 7.0f);
  EXPECT_EQ(slope, 1.0f);
}

}  // namespace
}  // namespace detail
}  // namespace rfa_cuda
