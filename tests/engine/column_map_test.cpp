// SPDX-License-Identifier: BSD-3-Clause
// The column map of the head transposes (engine/sequence_transpose.hpp): every slot's column,
// and each column's slots in increasing order, against a brute-force search, for GQA maps
// (several slots per column), permuted ones, columns no slot holds, and a million slots.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "engine/sequence_transpose.hpp"

namespace rfa::engine {
namespace {

void expect_matches_brute_force(const std::vector<std::int64_t>& column) {
  const ColumnMap<Kokkos::HostSpace> map(column);
  const auto lists = map.lists();
  std::int64_t width = 0;
  for (std::int64_t u : column) width = u + 1 > width ? u + 1 : width;
  ASSERT_EQ(lists.slots, std::int64_t(column.size()));
  ASSERT_EQ(lists.width, width);
  for (std::size_t j = 0; j < column.size(); ++j) ASSERT_EQ(lists.col[j], column[j]) << "slot " << j;
  for (std::int64_t u = 0; u < width; ++u) {
    std::vector<std::int64_t> expected;
    for (std::size_t j = 0; j < column.size(); ++j)
      if (column[j] == u) expected.push_back(std::int64_t(j));
    const std::vector<std::int64_t> got(lists.slot + lists.first[u], lists.slot + lists.first[u + 1]);
    ASSERT_EQ(got, expected) << "column " << u;
  }
}

TEST(ColumnMap, IdentityEachColumnOneSlot) {
  for (std::int64_t n : {0, 1, 2, 7, 64}) expect_matches_brute_force(identity_columns(n));
}

TEST(ColumnMap, GroupedQueryHeadsShareAColumn) {
  // Eight query-head slots over two K/V heads, grouped (0 0 0 0 1 1 1 1) and interleaved.
  expect_matches_brute_force({0, 0, 0, 0, 1, 1, 1, 1});
  expect_matches_brute_force({1, 0, 1, 0, 1, 0, 1, 0});
}

TEST(ColumnMap, ColumnsNoSlotHoldsHaveNoSlots) {
  expect_matches_brute_force({3, 3, 0});  // columns 1 and 2 empty
  expect_matches_brute_force({5});
}

TEST(ColumnMap, RandomMapsMatchTheBruteForce) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const std::int64_t slots = std::int64_t(rng() % 40), width = 1 + std::int64_t(rng() % 12);
    std::vector<std::int64_t> column;
    for (std::int64_t j = 0; j < slots; ++j) column.push_back(std::int64_t(rng() % std::uint64_t(width)));
    expect_matches_brute_force(column);
  }
}

TEST(ColumnMap, AMillionSlotsMapInLinearTime) {
  // A million query heads over 2^18 K/V heads: a search per column would be 2^38 steps; the
  // counting sort is a few milliseconds. Checked in full against the group rule.
  const std::int64_t slots = std::int64_t(1) << 20, group = 4;
  std::vector<std::int64_t> column(slots);
  for (std::int64_t j = 0; j < slots; ++j) column[std::size_t(j)] = j / group;
  const ColumnMap<Kokkos::HostSpace> map(column);
  const auto lists = map.lists();
  ASSERT_EQ(lists.width, slots / group);
  for (std::int64_t u = 0; u < lists.width; ++u) {
    ASSERT_EQ(lists.first[u], u * group);
    for (std::int64_t i = 0; i < group; ++i) ASSERT_EQ(lists.slot[u * group + i], u * group + i);
  }
}

}  // namespace
}  // namespace rfa::engine
