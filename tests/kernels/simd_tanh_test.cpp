// SPDX-License-Identifier: BSD-3-Clause
// simd::tanh, which soft-capped scores run through (AttentionParams::softcap): accuracy against
// the library's tanh in double on both sides of the switch between its polynomial and its
// exponential form, oddness, and saturation to +-1 (infinities included); its slope 1 - tanh^2
// (the soft cap's in the backward) against 1 / cosh^2 in double, in relative terms where tanh
// itself rounds to +-1; for the 8-lane type and the wide one (in the portable build both are the
// lane-by-lane code).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/simd.hpp"

namespace rfa {
namespace {

template <class V, int L>
std::vector<float> tanh_of(std::vector<float> x) {
  while (x.size() % L != 0) x.push_back(0.0f);
  std::vector<float> out(x.size());
  for (std::size_t i = 0; i < x.size(); i += L)
    simd::store_as(out.data() + i, simd::tanh(simd::load_as<V>(x.data() + i)));
  return out;
}

/// Every 1/8192 from -12 to 12, the switch at |x| = 0.625 and its neighbours, tiny values.
std::vector<float> sweep() {
  std::vector<float> x;
  for (int i = -12 * 8192; i <= 12 * 8192; ++i) x.push_back(float(i) / 8192.0f);
  for (float s : {1.0f, -1.0f})
    for (float e : {0.625f, std::nextafter(0.625f, 0.0f), std::nextafter(0.625f, 1.0f), 1e-6f, 1e-20f, 3e-39f})
      x.push_back(s * e);
  return x;
}

template <class V, int L>
void expect_accurate() {
  const std::vector<float> x = sweep();
  const std::vector<float> y = tanh_of<V, L>(x);
  double worst = 0.0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double ref = std::tanh(double(x[i]));
    if (ref == 0.0) {
      EXPECT_EQ(y[i], 0.0f) << "x = " << x[i];
      continue;
    }
    const double err = std::fabs(double(y[i]) - ref) / std::fabs(ref);
    worst = std::isnan(err) ? INFINITY : std::max(worst, err);  // std::max would skip a NaN
  }
  // The polynomial is good to 1.1e-7 in fp32, the exponential form to exp2's 3e-7 and less.
  EXPECT_LE(worst, 4.0e-7) << "worst relative error";
}

template <class V, int L>
void expect_odd_and_saturated() {
  const std::vector<float> x = sweep();
  std::vector<float> minus(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) minus[i] = -x[i];
  const std::vector<float> y = tanh_of<V, L>(x), ym = tanh_of<V, L>(minus);
  for (std::size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(y[i], -ym[i], 4.0e-7f) << "x = " << x[i];
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> far = {20.0f, 90.0f, 1e30f, inf, -20.0f, -90.0f, -1e30f, -inf};
  const std::vector<float> yf = tanh_of<V, L>(far);
  for (std::size_t i = 0; i < far.size(); ++i) EXPECT_EQ(yf[i], far[i] > 0 ? 1.0f : -1.0f) << "x = " << far[i];
}

template <class V, int L>
std::vector<float> slope_of(std::vector<float> x) {
  while (x.size() % L != 0) x.push_back(0.0f);
  std::vector<float> out(x.size());
  for (std::size_t i = 0; i < x.size(); i += L) {
    V slope;
    simd::tanh(simd::load_as<V>(x.data() + i), slope);
    simd::store_as(out.data() + i, slope);
  }
  return out;
}

/// The slope's relative error against 1 / cosh^2(x) over every 1/256 from -43 to 43 (tanh is +-1
/// in fp32 past 8.7, where 1 - t^2 would be 0 and the gradient through a saturated cap lost), and
/// the switch's neighbours: within 6e-7 plus what fp32's 2x log2 e gives the exponent (half an
/// ulp of a number up to 124, and 2 log2 e's own rounding times x: 4.4e-6 of a relative error at
/// the far end).
template <class V, int L>
void expect_slope_accurate() {
  std::vector<float> x;
  for (int i = -43 * 256; i <= 43 * 256; ++i) x.push_back(float(i) / 256.0f);
  for (float s : {1.0f, -1.0f})
    for (float e : {0.625f, std::nextafter(0.625f, 0.0f), std::nextafter(0.625f, 1.0f), 1e-6f, 1e-20f, 3e-39f})
      x.push_back(s * e);
  const std::vector<float> y = slope_of<V, L>(x);
  const double two_log2e = 2.0 * 1.4426950408889634;
  const double constant_error = std::fabs(double(float(two_log2e)) - two_log2e);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double c = std::cosh(double(x[i])), ref = 1.0 / (c * c);
    const double ax = std::fabs(double(x[i])), exponent = two_log2e * ax;
    const double exponent_error = std::ldexp(1.0, std::max(0, std::ilogb(exponent)) - 24) + ax * constant_error;
    const double bound = 6e-7 + exponent_error * 0.6931471805599453;
    const double err = std::fabs(double(y[i]) - ref) / ref;
    EXPECT_LE(err, bound) << "x = " << x[i] << ": slope " << y[i] << " against " << ref;
  }
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> ends = slope_of<V, L>({-inf, inf, 1e30f, -1e30f});
  EXPECT_EQ(ends[0], 0.0f) << "the slope at -inf";
  for (std::size_t i = 1; i < 4; ++i) {
    EXPECT_GE(ends[i], 0.0f) << "end " << i;
    EXPECT_LE(ends[i], std::ldexp(1.0f, -123)) << "end " << i;
  }
}

TEST(SimdTanh, EightLanesAccurate) { expect_accurate<simd::f8, simd::kLanes>(); }
TEST(SimdTanh, WideAccurate) { expect_accurate<simd::wide, simd::kWideLanes>(); }
TEST(SimdTanh, EightLanesOddAndSaturated) { expect_odd_and_saturated<simd::f8, simd::kLanes>(); }
TEST(SimdTanh, WideOddAndSaturated) { expect_odd_and_saturated<simd::wide, simd::kWideLanes>(); }
TEST(SimdTanh, EightLanesSlopeAccurate) { expect_slope_accurate<simd::f8, simd::kLanes>(); }
TEST(SimdTanh, WideSlopeAccurate) { expect_slope_accurate<simd::wide, simd::kWideLanes>(); }

}  // namespace
}  // namespace rfa
