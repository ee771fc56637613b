// SPDX-License-Identifier: BSD-3-Clause
// first_nonfinite, the scan behind the value checks: every NaN and infinity bit pattern of
// each storage type is found at its index (the first of several), finite extremes and
// subnormals are not, and -inf is finite only where the caller allows it (an lse).
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "core/dtype.hpp"
#include "kernels/nonfinite_scan.hpp"

namespace rfa {
namespace kernels {
namespace {

template <class T>
T from_bits(std::uint32_t bits) {
  if constexpr (std::is_same<T, float>::value) {
    return bits_float(bits);
  } else {
    return T{std::uint16_t(bits)};
  }
}

template <class T>
std::int64_t scan(const std::vector<T>& v, bool allow_minus_infinity = false) {
  return first_nonfinite<T, Kokkos::HostSpace>(v.data(), std::int64_t(v.size()), allow_minus_infinity);
}

template <class T>
class NonfiniteScan : public ::testing::Test {};
using StorageTypes = ::testing::Types<float, bf16_t, fp16_t>;
TYPED_TEST_SUITE(NonfiniteScan, StorageTypes);

TYPED_TEST(NonfiniteScan, FindsTheFirstNanOrInfinityAndNothingElse) {
  using T = TypeParam;
  constexpr std::uint32_t exponent = NonfiniteBits<T>::exponent;
  const std::uint32_t sign = exponent == 0x7f800000u ? 0x80000000u : 0x8000u;
  std::vector<T> values(1000);
  for (std::size_t i = 0; i < values.size(); ++i) from_float(float(i % 17) - 8.0f, values[i]);
  // The largest finite value, the smallest subnormal and minus zero are finite.
  values[10] = from_bits<T>(exponent - 1u);
  values[11] = from_bits<T>(1u);
  values[12] = from_bits<T>(sign);
  EXPECT_EQ(scan(values), -1);
  for (const std::uint32_t bad : {exponent, exponent | sign, exponent | 1u, exponent | (exponent >> 1) | 7u}) {
    std::vector<T> v = values;
    v[700] = from_bits<T>(bad);
    v[900] = from_bits<T>(exponent);
    EXPECT_EQ(scan(v), 700) << std::hex << bad;
  }
}

TYPED_TEST(NonfiniteScan, MinusInfinityIsFiniteOnlyWhereAllowed) {
  using T = TypeParam;
  std::vector<T> v(64);
  for (auto& x : v) from_float(0.25f, x);
  v[5] = from_bits<T>(NonfiniteBits<T>::minus_infinity);
  EXPECT_EQ(scan(v, false), 5);
  EXPECT_EQ(scan(v, true), -1);
  v[9] = from_bits<T>(NonfiniteBits<T>::exponent);  // +inf stays an error
  EXPECT_EQ(scan(v, true), 9);
}

TEST(NonfiniteScanEmpty, AnEmptyTensorHasNone) {
  std::vector<float> none;
  EXPECT_EQ(scan(none), -1);
}

}  // namespace
}  // namespace kernels
}  // namespace rfa
