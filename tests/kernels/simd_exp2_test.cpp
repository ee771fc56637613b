// SPDX-License-Identifier: BSD-3-Clause
// simd::exp2, which every softmax in the host kernels runs through: accuracy against the
// library's exp2 in double, the exact zeros masked scores rely on, and the subnormal edge, for
// the 8-lane type and the wide one (16 lanes where the build targets AVX-512, with its own
// instruction sequence; in the portable build both are the lane-by-lane code).
#include <gtest/gtest.h>

#include <cfenv>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/simd.hpp"

namespace rfa {
namespace {

template <class V, int L>
std::vector<float> exp2_of(const std::vector<float>& x) {
  std::vector<float> out(x.size());
  for (std::size_t i = 0; i + L <= x.size(); i += L)
    simd::store_as(out.data() + i, simd::exp2(simd::load_as<V>(x.data() + i)));
  return out;
}

/// Every 1/4096 from -126 to 127, plus points near the ends and the integers.
std::vector<float> sweep() {
  std::vector<float> x;
  for (int i = -126 * 4096; i <= 127 * 4096; ++i) x.push_back(float(i) / 4096.0f);
  for (float e : {-125.999f, -0.5f, 0.5f, 126.5f, 1e-7f, -1e-7f}) x.push_back(e);
  while (x.size() % 16 != 0) x.push_back(0.0f);
  return x;
}

template <class V, int L>
void expect_accurate() {
  const std::vector<float> x = sweep();
  const std::vector<float> y = exp2_of<V, L>(x);
  double worst = 0.0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double ref = std::exp2(double(x[i]));
    const double err = std::fabs(double(y[i]) - ref) / ref;
    worst = std::isnan(err) ? INFINITY : std::max(worst, err);  // std::max would skip a NaN
  }
  // The polynomial is good to 8e-8; what remains is fp32 rounding of its steps (a few ulp).
  EXPECT_LE(worst, 4.0e-7) << "worst relative error";
}

template <class V, int L>
void expect_zero_below_range() {
  std::vector<float> x(L * 4);
  const float below[] = {-126.51f, -127.0f, -150.0f, -1e30f, -std::numeric_limits<float>::infinity()};
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = below[i % 5];
  for (float y : exp2_of<V, L>(x)) EXPECT_EQ(y, 0.0f);
  std::vector<float> zero(L, 0.0f);
  for (float y : exp2_of<V, L>(zero)) EXPECT_EQ(y, 1.0f);
}

/// Between -126.5 and -126, 2^x is subnormal: 0, or the value to a subnormal's precision,
/// never anything larger (a masked or underflowing score must not carry weight).
template <class V, int L>
void expect_subnormal_edge() {
  std::vector<float> x(L);
  for (int i = 0; i < L; ++i) x[i] = -126.0f - 0.5f * float(i + 1) / float(L + 1);
  const std::vector<float> y = exp2_of<V, L>(x);
  for (int i = 0; i < L; ++i) {
    const double ref = std::exp2(double(x[i]));
    if (y[i] != 0.0f) {
      EXPECT_NEAR(y[i] / ref, 1.0, 1e-6) << "x = " << x[i];
    }
  }
}

/// The same under each directed rounding mode (a thread of the host execution space keeps the
/// mode it started with: docs/reliability.md): the vector types' range reduction rounds to
/// nearest whatever the mode. The portable lanes' does not (their code is for the device
/// compilers, whose rounding no host program sets).
template <class V, int L>
void expect_accurate_in_every_rounding_mode() {
  for (const int mode : {FE_UPWARD, FE_DOWNWARD, FE_TOWARDZERO}) {
    SCOPED_TRACE(::testing::Message() << "rounding mode " << mode);
    ASSERT_EQ(std::fesetround(mode), 0);
    expect_accurate<V, L>();
    std::fesetround(FE_TONEAREST);
  }
}

TEST(SimdExp2, EightLanesAccurate) { expect_accurate<simd::f8, simd::kLanes>(); }
#if RFA_NATIVE_VECTORS && defined(__AVX__)
TEST(SimdExp2, EightLanesAccurateInEveryRoundingMode) {
  expect_accurate_in_every_rounding_mode<simd::f8, simd::kLanes>();
}
#endif
#if RFA_NATIVE_VECTORS && defined(__AVX512F__)
TEST(SimdExp2, WideAccurateInEveryRoundingMode) {
  expect_accurate_in_every_rounding_mode<simd::wide, simd::kWideLanes>();
}
#endif
TEST(SimdExp2, WideAccurate) { expect_accurate<simd::wide, simd::kWideLanes>(); }
TEST(SimdExp2, EightLanesZeroBelowRange) { expect_zero_below_range<simd::f8, simd::kLanes>(); }
TEST(SimdExp2, WideZeroBelowRange) { expect_zero_below_range<simd::wide, simd::kWideLanes>(); }
TEST(SimdExp2, EightLanesSubnormalEdge) { expect_subnormal_edge<simd::f8, simd::kLanes>(); }
TEST(SimdExp2, WideSubnormalEdge) { expect_subnormal_edge<simd::wide, simd::kWideLanes>(); }

}  // namespace
}  // namespace rfa
