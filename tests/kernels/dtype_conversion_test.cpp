// SPDX-License-Identifier: BSD-3-Clause
// The 16-bit storage conversions: exact round trips, round-to-nearest-even, specials.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "core/dtype.hpp"

namespace rfa {
namespace {

TEST(Bf16, EveryBitPatternRoundTrips) {
  for (std::uint32_t bits = 0; bits < 0x10000u; ++bits) {
    const bf16_t x{std::uint16_t(bits)};
    const float f = to_float(x);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(to_float(from_float<bf16_t>(f))));
      continue;
    }
    EXPECT_EQ(from_float<bf16_t>(f).bits, bits) << std::hex << bits;
  }
}

TEST(Fp16, EveryBitPatternRoundTrips) {
  for (std::uint32_t bits = 0; bits < 0x10000u; ++bits) {
    const fp16_t x{std::uint16_t(bits)};
    const float f = to_float(x);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(to_float(from_float<fp16_t>(f))));
      continue;
    }
    EXPECT_EQ(from_float<fp16_t>(f).bits, bits) << std::hex << bits << " value " << f;
  }
}

TEST(Bf16, RoundsToNearestEven) {
  // 1 + 2^-8 lies halfway between 1 and 1 + 2^-7: ties go to the even mantissa (1).
  EXPECT_EQ(to_float(from_float<bf16_t>(1.0f + 0.00390625f)), 1.0f);
  // 1 + 3*2^-8 lies halfway between 1 + 2^-7 and 1 + 2^-6: ties to even (1 + 2^-6).
  EXPECT_EQ(to_float(from_float<bf16_t>(1.0f + 3 * 0.00390625f)), 1.0f + 0.015625f);
  EXPECT_EQ(to_float(from_float<bf16_t>(1.0f + 0.0040f)), 1.0078125f);
}

TEST(Fp16, RoundingOverflowAndSubnormals) {
  EXPECT_EQ(to_float(from_float<fp16_t>(65504.0f)), 65504.0f);
  EXPECT_TRUE(std::isinf(to_float(from_float<fp16_t>(65520.0f))));
  EXPECT_EQ(to_float(from_float<fp16_t>(65519.0f)), 65504.0f);
  EXPECT_EQ(to_float(from_float<fp16_t>(-1e9f)), -std::numeric_limits<float>::infinity());
  EXPECT_EQ(to_float(from_float<fp16_t>(5.9604644775390625e-8f)), 5.9604644775390625e-8f);  // 2^-24
  EXPECT_EQ(to_float(from_float<fp16_t>(2.9802322387695312e-8f)), 0.0f);                    // 2^-25 ties to even (0)
  EXPECT_EQ(to_float(from_float<fp16_t>(1.0f + 0.00048828125f)), 1.0f);                     // halfway, ties to even
  // 1 + 3*2^-11 lies halfway between 1 + 2^-10 and 1 + 2^-9: ties to even (up), either sign.
  EXPECT_EQ(from_float<fp16_t>(1.0f + 3 * 0.00048828125f).bits, 0x3C02);
  EXPECT_EQ(from_float<fp16_t>(-1.0f - 3 * 0.00048828125f).bits, 0xBC02);
  EXPECT_EQ(to_float(from_float<fp16_t>(0.1f)), 0.0999755859375f);
}

TEST(Dtype, NamesAndSizes) {
  EXPECT_STREQ(dtype_name(RFA_DTYPE_BFLOAT16), "bfloat16");
  EXPECT_EQ(dtype_size(RFA_DTYPE_FLOAT32), 4u);
  EXPECT_EQ(dtype_size(RFA_DTYPE_FLOAT16), 2u);
}

}  // namespace
}  // namespace rfa
