// SPDX-License-Identifier: BSD-3-Clause
// Keys of an imaginary job, for tests and the edge-count tool: NODES nodes of GPUS GPUs each,
// ranks placed block-wise (rank r on node r / GPUS) or cyclically (rank r on node r % NODES).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "topology/rank_key.hpp"

namespace rfa::topology {

enum class Placement { block, cyclic };

/// The largest imaginary job: GPUs per node (their bus ids take one byte) and ranks (a key is
/// a few hundred bytes: a million ranks' keys fit in memory).
constexpr int kMaxSimulatedGpusPerNode = 32;
constexpr std::int64_t kMaxSimulatedRanks = std::int64_t(1) << 20;

/// "block" or "cyclic"; throws RFA_ERROR_INVALID_ARGUMENT otherwise.
Placement parse_placement(const std::string& name);

/// Parses "NODESxGPUS" (e.g. "4x4"); throws RFA_ERROR_INVALID_ARGUMENT otherwise, and for a
/// job beyond the limits above.
void parse_shape(const std::string& shape, int& nodes, int& gpus_per_node);

/// Keys of nodes*gpus_per_node ranks (keys[r] belongs to rank r). Nodes are named "node1",
/// "node2", ... ("node10" after "node9"). A node has two packages (one when it has one GPU),
/// one NUMA node per package, the GPUs split evenly over them, two GPUs per PCI switch
/// (bus ids 0000:BB:00.0 with BB = 0x10 * switch + slot).
std::vector<RankKey> simulate_keys(int nodes, int gpus_per_node, Placement placement);

}  // namespace rfa::topology
