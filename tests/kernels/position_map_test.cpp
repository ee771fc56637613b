// SPDX-License-Identifier: BSD-3-Clause
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "core/positions.hpp"

namespace rfa {
namespace {

TEST(PositionMap, TwoSegmentsIndexAndRange) {
  const PositionMap m = PositionMap::two({10, 1, 5}, {40, 2, 5});  // 10..14, 40,42,..,48
  EXPECT_EQ(m.length(), 10);
  EXPECT_EQ(m(0), 10);
  EXPECT_EQ(m(4), 14);
  EXPECT_EQ(m(5), 40);
  EXPECT_EQ(m(9), 48);
  std::int64_t lo, hi;
  m.range(3, 7, lo, hi);
  EXPECT_EQ(lo, 13);
  EXPECT_EQ(hi, 42);
  m.range(6, 8, lo, hi);
  EXPECT_EQ(lo, 42);
  EXPECT_EQ(hi, 44);
}

TEST(PositionMap, ValidationMessages) {
  EXPECT_NO_THROW(validate_position_map(PositionMap::contiguous(0, 4), 4, "query"));
  EXPECT_THROW(validate_position_map(PositionMap::contiguous(0, 4), 5, "query"), Error);
  EXPECT_THROW(validate_position_map(PositionMap::one({-1, 1, 4}), 4, "key"), Error);
  PositionMap none;
  EXPECT_THROW(validate_position_map(none, 0, "key"), Error);
}

}  // namespace
}  // namespace rfa
