// SPDX-License-Identifier: BSD-3-Clause
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "key_builders.hpp"
#include "topology/ring_order.hpp"
#include "topology/simulated_placement.hpp"

namespace rfa::topology {
namespace {

using testing::numbered;
using testing::synthetic_key;

// For each node: how many ring edges leave it and how many enter it.
struct NodeCrossings {
  int outbound = 0;
  int inbound = 0;
};

std::map<std::string, NodeCrossings> crossings_per_node(const std::vector<RankKey>& keys,
                                                        const std::vector<int>& order) {
  std::map<std::string, NodeCrossings> per_node;
  for (std::size_t p = 0; p < order.size(); ++p) {
    const RankKey& from = keys[order[p]];
    const RankKey& to = keys[order[(p + 1) % order.size()]];
    per_node[from.host];  // nodes with no crossing still appear
    if (!same_host(from, to)) {
      ++per_node[from.host].outbound;
      ++per_node[to.host].inbound;
    }
  }
  return per_node;
}

void expect_one_crossing_each_way(const std::vector<RankKey>& keys, const std::vector<int>& order) {
  for (const auto& [host, crossings] : crossings_per_node(keys, order)) {
    EXPECT_EQ(crossings.outbound, 1) << "node " << host;
    EXPECT_EQ(crossings.inbound, 1) << "node " << host;
  }
}

TEST(RingOrder, NodesContiguousInNaturalHostOrder) {
  // Ranks alternate between node10 and node2; node2 must come first.
  auto keys =
      numbered({synthetic_key("node10"), synthetic_key("node2"), synthetic_key("node10"), synthetic_key("node2")});
  EXPECT_EQ(compute_ring_order(keys), (std::vector<int>{1, 3, 0, 2}));
}

TEST(RingOrder, DescribedByHost) {
  RingOrder chosen;
  chosen.keys =
      numbered({synthetic_key("node0"), synthetic_key("node1"), synthetic_key("node0"), synthetic_key("node1")});
  chosen.order = {0, 2, 1, 3};
  EXPECT_EQ(order_by_host(chosen), "node0{0,2} node1{1,3}: 2 inter-node edges");
  chosen.order = identity_order(4);
  EXPECT_EQ(order_by_host(chosen), "node0{0} node1{1} node0{2} node1{3}: 4 inter-node edges");
  EXPECT_EQ(order_by_host(chosen, 2), "node0{0} node1{1} and 2 more runs: 4 inter-node edges");
  chosen.keys.resize(1);
  chosen.order = {0};
  EXPECT_EQ(order_by_host(chosen), "node0{0}: 0 inter-node edges");
  chosen.keys.clear();
  chosen.order = {1, 0};
  EXPECT_EQ(order_by_host(chosen), "1 0 (no host names gathered)");
}

TEST(RingOrder, WithinANodeByPackageThenNuma) {
  // One node, two sockets with two NUMA domains each; ranks scattered across them.
  auto keys = numbered({synthetic_key("n", 1, 3), synthetic_key("n", 0, 1), synthetic_key("n", 1, 2),
                        synthetic_key("n", 0, 0), synthetic_key("n", 0, 1), synthetic_key("n", 1, 2)});
  const std::vector<int> order = compute_ring_order(keys);
  EXPECT_EQ(order, (std::vector<int>{3, 1, 4, 2, 5, 0}));
  EdgeCounts topo = count_edges(keys, order);
  EXPECT_EQ(topo.inter_node, 0);
  EXPECT_EQ(topo.cross_package, 2);  // socket 0 -> 1, and the wrap-around 1 -> 0
  EXPECT_EQ(topo.cross_numa, 4);     // 0->1, 1->2, 2->3, 3->0 (wrap)
  EdgeCounts identity = count_edges(keys, identity_order(6));
  EXPECT_EQ(identity.cross_package, 4);  // 0-1, 1-2, 2-3, 4-5 change socket; 3-4, 5-0 do not
}

TEST(RingOrder, ACrossSocketEdgeCrossesNumaNodesThoughTheirsAreUnknown) {
  // Two sockets whose ranks' NUMA nodes are unknown: each edge between them changes NUMA node.
  const auto keys = numbered({synthetic_key("n", 0), synthetic_key("n", 1)});
  const EdgeCounts counts = count_edges(keys, identity_order(2));
  EXPECT_EQ(counts.cross_package, 2);
  EXPECT_EQ(counts.cross_numa, 2);
}

TEST(RingOrder, GpusUnderOnePciSwitchAreNeighbours) {
  // One socket; two PCI switches (buses 0x1a/0x1b and 0xb1/0xb2), ranks assigned across them.
  // Bus ids arrive in the spellings CUDA and NVML use once normalized (lower case, 4-digit domain).
  auto keys = numbered({synthetic_key("n", 0, 0, "0000:b1:00.0"), synthetic_key("n", 0, 0, "0000:1a:00.0"),
                        synthetic_key("n", 0, 0, "0000:b2:00.0"), synthetic_key("n", 0, 0, "0000:1b:00.0")});
  EXPECT_EQ(compute_ring_order(keys), (std::vector<int>{1, 3, 0, 2}));
}

TEST(RingOrder, CyclicPlacementCrossesEachNodeBoundaryOnce) {
  const auto keys = simulate_keys(4, 4, Placement::cyclic);
  const std::vector<int> order = compute_ring_order(keys);
  ASSERT_TRUE(is_single_cycle(order));
  // node1 holds ranks 0,4,8,12 (GPUs 0..3), node2 ranks 1,5,9,13, ...
  EXPECT_EQ(order, (std::vector<int>{0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15}));
  expect_one_crossing_each_way(keys, order);
  EXPECT_EQ(count_edges(keys, order).inter_node, 4);
  EXPECT_EQ(count_edges(keys, identity_order(16)).inter_node, 16);
}

TEST(RingOrder, SimulatedCyclicFourByFourEdgeCounts) {
  // The figures rfa_ring_edges prints for --simulate 4x4 --placement cyclic.
  const auto keys = simulate_keys(4, 4, Placement::cyclic);
  const EdgeCounts topo = count_edges(keys, compute_ring_order(keys));
  const EdgeCounts identity = count_edges(keys, identity_order(16));
  EXPECT_EQ(topo.inter_node, 4);
  EXPECT_EQ(identity.inter_node, 16);
  EXPECT_EQ(topo.cross_package, 4);  // one socket change inside each node (wrap goes off-node)
}

TEST(RingOrder, BlockPlacementIsAlreadyTopologyOrder) {
  const auto keys = simulate_keys(3, 4, Placement::block);
  EXPECT_EQ(compute_ring_order(keys), identity_order(12));
}

TEST(RingOrder, SlurmTopologyAddressOrdersNodesWhenEveryKeyHasOne) {
  // Host names say a < b < c, the switch tree says c (switch s1) < a (s2) < b (s10).
  auto keys = numbered({synthetic_key("a", -1, -1, "", "s2.a"), synthetic_key("b", -1, -1, "", "s10.b"),
                        synthetic_key("c", -1, -1, "", "s1.c")});
  EXPECT_EQ(compute_ring_order(keys), (std::vector<int>{2, 0, 1}));
  // One key without an address: host-name order for all.
  set_field(keys[1].slurm_topology_addr, "");
  EXPECT_EQ(compute_ring_order(keys), (std::vector<int>{0, 1, 2}));
}

TEST(RingOrder, TruncatedHostNamesStillSeparateNodes) {
  const std::string prefix(RankKey::kHostCapacity + 10, 'x');
  auto keys = numbered({synthetic_key(prefix + "1"), synthetic_key(prefix + "2"), synthetic_key(prefix + "1")});
  ASSERT_STREQ(keys[0].host, keys[1].host);  // same truncated text
  const auto order = compute_ring_order(keys);
  EXPECT_EQ(count_edges(keys, order).inter_node, 2);
  EXPECT_EQ(std::abs(ring_position(order, 0) - ring_position(order, 2)), 1);
}

TEST(RingOrder, RanksPerHostCountNamesNotOnlyTheirHashes) {
  RingOrder chosen;
  chosen.keys = numbered({synthetic_key("node0"), synthetic_key("node1"), synthetic_key("node0")});
  EXPECT_EQ(most_ranks_on_one_host(chosen), 2);
  EXPECT_EQ(host_count(chosen), 2);
  chosen.keys[1].host_hash = chosen.keys[0].host_hash;  // two names whose hashes collide
  EXPECT_EQ(most_ranks_on_one_host(chosen), 2);
  EXPECT_EQ(host_count(chosen), 2);
  const std::string prefix(RankKey::kHostCapacity + 10, 'x');  // one text, two hashes
  chosen.keys = numbered({synthetic_key(prefix + "1"), synthetic_key(prefix + "2"), synthetic_key(prefix + "1")});
  EXPECT_EQ(most_ranks_on_one_host(chosen), 2);
  EXPECT_EQ(host_count(chosen), 2);
  chosen.keys.clear();
  EXPECT_EQ(most_ranks_on_one_host(chosen), 1);
  EXPECT_EQ(host_count(chosen), 1);
}

TEST(RingOrder, RandomJobsGiveContiguousNodesAndOneCrossingPerNode) {
  std::mt19937 rng(20240601);
  for (int trial = 0; trial < 200; ++trial) {
    const int nodes = 1 + static_cast<int>(rng() % 7);
    const int size = nodes + static_cast<int>(rng() % 25);
    std::vector<RankKey> keys;
    // Every node gets at least one rank, then ranks land anywhere.
    for (int r = 0; r < size; ++r) {
      const int node = r < nodes ? r : static_cast<int>(rng() % nodes);
      keys.push_back(synthetic_key("host" + std::to_string(node * 7 % 11), static_cast<int>(rng() % 2),
                                   static_cast<int>(rng() % 4)));
    }
    std::shuffle(keys.begin(), keys.end(), rng);
    keys = numbered(keys);
    const auto order = compute_ring_order(keys);
    ASSERT_TRUE(is_single_cycle(order)) << "trial " << trial;
    std::set<std::string> finished;  // nodes whose block of positions has ended
    for (std::size_t p = 0; p < order.size(); ++p) {
      const std::string host = keys[order[p]].host;
      ASSERT_EQ(finished.count(host), 0u) << "node " << host << " is split, trial " << trial;
      if (p + 1 == order.size() || keys[order[p + 1]].host != host) finished.insert(host);
    }
    if (nodes > 1) expect_one_crossing_each_way(keys, order);
    EXPECT_EQ(count_edges(keys, order).inter_node, nodes > 1 ? nodes : 0);
  }
}

TEST(RingOrder, SingleCycleMeansPermutation) {
  EXPECT_TRUE(is_single_cycle({}));
  EXPECT_TRUE(is_single_cycle({0}));
  EXPECT_TRUE(is_single_cycle({2, 0, 3, 1}));
  EXPECT_FALSE(is_single_cycle({0, 0, 1}));   // rank 2 missing, rank 0 twice
  EXPECT_FALSE(is_single_cycle({0, 1, 3}));   // out of range
  EXPECT_FALSE(is_single_cycle({0, -1, 2}));  // negative
}

TEST(RingOrder, PositionOfARank) {
  const std::vector<int> order = {2, 0, 3, 1};
  EXPECT_EQ(ring_position(order, 2), 0);
  EXPECT_EQ(ring_position(order, 1), 3);
  EXPECT_THROW(ring_position(order, 4), rfa::Error);
}

TEST(RingOrder, EdgeCountsOfTinyRings) {
  auto one = numbered({synthetic_key("a", 0, 0)});
  EXPECT_EQ(count_edges(one, {0}).inter_node, 0);
  auto two = numbered({synthetic_key("a"), synthetic_key("b")});
  EXPECT_EQ(count_edges(two, {0, 1}).inter_node, 2);  // there and back: the ring is two edges
  EXPECT_THROW(count_edges(two, {0, 0}), rfa::Error);
  EXPECT_THROW(count_edges(two, {0}), rfa::Error);
}

TEST(SimulatedPlacement, ParsesShapesAndPlacements) {
  int nodes = 0, gpus = 0;
  parse_shape("4x8", nodes, gpus);
  EXPECT_EQ(nodes, 4);
  EXPECT_EQ(gpus, 8);
  for (const char* bad : {"4", "4x", "x4", "0x4", "4x-1", "4x4x", "4*4", " 4x4", "+4x4", "4x 4"}) {
    EXPECT_THROW(parse_shape(bad, nodes, gpus), rfa::Error) << bad;
  }
  // Beyond what it simulates (a rank count past an int, or keys past memory): refused by name.
  parse_shape("32768x32", nodes, gpus);  // 2^20 ranks: the most
  for (const char* big : {"100000000x32", "99999999999x2", "1x33", "32769x32", "1048577x1"}) {
    EXPECT_THROW(parse_shape(big, nodes, gpus), rfa::Error) << big;
  }
  EXPECT_THROW(simulate_keys(1 << 16, 32, Placement::block), rfa::Error);
  EXPECT_EQ(parse_placement("cyclic"), Placement::cyclic);
  EXPECT_EQ(parse_placement("block"), Placement::block);
  EXPECT_THROW(parse_placement("round-robin"), rfa::Error);
}

}  // namespace
}  // namespace rfa::topology
