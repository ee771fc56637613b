// SPDX-License-Identifier: BSD-3-Clause
// The permutation check behind MpiCommunicator's creation, without MPI.
#include "comm/ring_positions.hpp"

#include <gtest/gtest.h>

namespace rfa::comm {
namespace {

TEST(RingPositions, PermutationsPass) {
  EXPECT_EQ(describe_position_errors({0}), "");
  EXPECT_EQ(describe_position_errors({0, 1, 2, 3}), "");
  EXPECT_EQ(describe_position_errors({3, 1, 0, 2}), "");
}

TEST(RingPositions, DuplicatesAreNamedWithBothRanksAndTheMissingPosition) {
  const std::string m = describe_position_errors({0, 2, 2});
  EXPECT_NE(m.find("position 2 was given by ranks 1 and 2"), std::string::npos) << m;
  EXPECT_NE(m.find("no rank took position 1"), std::string::npos) << m;
}

TEST(RingPositions, OutOfRangeIsNamed) {
  const std::string m = describe_position_errors({0, -1, 5});
  EXPECT_NE(m.find("rank 1 gave position -1, outside 0..2"), std::string::npos) << m;
  EXPECT_NE(m.find("rank 2 gave position 5, outside 0..2"), std::string::npos) << m;
  EXPECT_NE(m.find("permutation of 0..2"), std::string::npos) << m;
}

}  // namespace
}  // namespace rfa::comm
