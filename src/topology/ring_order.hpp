// SPDX-License-Identifier: BSD-3-Clause
// The ring order as a pure function of the gathered keys: every rank computes the same order
// from the same bytes, so no rank has to tell the others where they sit.
#pragma once

#include <string>
#include <vector>

#include "rfa/rfa.h"
#include "topology/rank_key.hpp"

namespace rfa::topology {

/// The topology order of the ranks whose keys are given (keys[i] belongs to rank i).
/// order[position] = rank. Rules, most significant first:
///  - ranks of one node (same host) are contiguous;
///  - nodes in SLURM_TOPOLOGY_ADDR order (natural order, so switch s2 < s10) when every key has
///    one, otherwise in natural host-name order ("node2" < "node10");
///  - within a node by package, then NUMA node, then GPU PCI bus id (GPUs under one PCI switch
///    have neighbouring bus numbers, so bus order approximates PCI distance), then rank.
/// The ring then crosses each node boundary once: one inbound and one outbound inter-node edge
/// per node.
std::vector<int> compute_ring_order(const std::vector<RankKey>& keys);

/// True when order is a permutation of 0..P-1. The ring sends position p to position p+1 mod P,
/// so a permutation is exactly an order whose ring is one cycle through every rank; anything
/// else (a repeated or missing rank) would split or break the ring.
bool is_single_cycle(const std::vector<int>& order);

/// 0, 1, ..., size-1.
std::vector<int> identity_order(int size);

/// The position of rank in order (the key to pass to MPI_Comm_split). Throws
/// RFA_ERROR_INVALID_ARGUMENT when the rank is not in the order.
int ring_position(const std::vector<int>& order, int rank);

/// Edges of the ring (position p -> p+1, including the wrap-around P-1 -> 0) that leave a node,
/// or stay in a node but change package or NUMA node (counted only when both ends know it; a
/// change of package is a change of NUMA node too).
/// A ring of one rank has no edges.
struct EdgeCounts {
  int inter_node = 0;
  int cross_package = 0;  ///< cross-socket edges inside a node
  int cross_numa = 0;     ///< edges inside a node between NUMA nodes (includes cross_package ones)
};

EdgeCounts count_edges(const std::vector<RankKey>& keys, const std::vector<int>& order);

/// A chosen ring order (choose_ring_order() fills it; the JSON dump reads it).
struct RingOrder {
  std::vector<int> order;                                  ///< order[position] = rank in the communicator
  int position = 0;                                        ///< this rank's position: the key for MPI_Comm_split
  rfa_ring_order_t policy_used = RFA_RING_ORDER_IDENTITY;  ///< never DEFAULT
  std::string order_file;                                  ///< the file read when policy_used is FILE
  std::vector<RankKey> keys;                               ///< every rank's key (keys[i] of rank i), for provenance
};

/// The order as a line of text: the ranks in ring order, grouped into runs of one host, and the
/// count of inter-node edges, e.g. "node0{0,2} node1{1,3}: 2 inter-node edges". Runs after the
/// first `max_runs` are counted, not listed. Without every rank's key: the ranks alone.
std::string order_by_host(const RingOrder& order, std::size_t max_runs = 32);

/// The most ranks that share one host (same_host: the name's hash and its text), from the keys
/// every rank gathered (1 without keys): the same on every rank.
int most_ranks_on_one_host(const RingOrder& order);

/// How many hosts the ranks run on, from the keys every rank gathered (1 without keys): the
/// same on every rank.
int host_count(const RingOrder& order);

}  // namespace rfa::topology
