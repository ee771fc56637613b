// SPDX-License-Identifier: BSD-3-Clause
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "topology/natural_order.hpp"

namespace rfa::topology {
namespace {

TEST(NaturalOrder, NumbersCompareByValue) {
  EXPECT_TRUE(natural_less("node2", "node10"));
  EXPECT_FALSE(natural_less("node10", "node2"));
  EXPECT_TRUE(natural_less("node9", "node10"));
  EXPECT_TRUE(natural_less("rack1-node10", "rack2-node1"));
  EXPECT_TRUE(natural_less("rack1-node9", "rack1-node10"));
}

TEST(NaturalOrder, IsStrictAndTotal) {
  EXPECT_FALSE(natural_less("node7", "node7"));
  // Equal by value but different text: still ordered, one way only.
  EXPECT_NE(natural_less("node01", "node1"), natural_less("node1", "node01"));
  EXPECT_TRUE(natural_less("node", "node1"));
  EXPECT_FALSE(natural_less("node1", "node"));
}

TEST(NaturalOrder, LongDigitRunsDoNotOverflow) {
  EXPECT_TRUE(natural_less("n99999999999999999999999", "n100000000000000000000000"));
  EXPECT_TRUE(natural_less("n000000000000000000000002", "n10"));
}

TEST(NaturalOrder, SortsAClusterLikeAPerson) {
  std::vector<std::string> hosts = {"node10", "node1", "gpu-a100-3", "node2", "gpu-a100-12", "node11"};
  std::sort(hosts.begin(), hosts.end(), natural_less);
  EXPECT_EQ(hosts, (std::vector<std::string>{"gpu-a100-3", "gpu-a100-12", "node1", "node2", "node10", "node11"}));
}

}  // namespace
}  // namespace rfa::topology
