// SPDX-License-Identifier: BSD-3-Clause
#include "topology/simulated_placement.hpp"

#include <cstdio>

#include "core/error.hpp"

namespace rfa::topology {

Placement parse_placement(const std::string& name) {
  if (name == "block") return Placement::block;
  if (name == "cyclic") return Placement::cyclic;
  fail(RFA_ERROR_INVALID_ARGUMENT, "rfa topology: placement '", name, "' is not block or cyclic");
}

void parse_shape(const std::string& shape, int& nodes, int& gpus_per_node) {
  // Digits only, each number short enough for sscanf's %d not to overflow.
  const std::size_t x = shape.find('x');
  const bool digits = x != std::string::npos && x > 0 && x + 1 < shape.size() && x <= 9 && shape.size() - x - 1 <= 9 &&
                      shape.find_first_not_of("0123456789x") == std::string::npos &&
                      shape.find('x', x + 1) == std::string::npos;
  int consumed = 0;
  bool ok = digits && std::sscanf(shape.c_str(), "%dx%d%n", &nodes, &gpus_per_node, &consumed) == 2 &&
            consumed == static_cast<int>(shape.size()) && nodes > 0 && gpus_per_node > 0;
  require(ok, "rfa topology: '", shape, "' is not NODESxGPUS with both positive (e.g. 4x4)");
  require(gpus_per_node <= kMaxSimulatedGpusPerNode && std::int64_t(nodes) * gpus_per_node <= kMaxSimulatedRanks,
          "rfa topology: '", shape, "' is more than rfa_ring_edges simulates: at most ", kMaxSimulatedGpusPerNode,
          " GPUs per node and ", kMaxSimulatedRanks, " ranks");
}

std::vector<RankKey> simulate_keys(int nodes, int gpus_per_node, Placement placement) {
  require(nodes > 0 && gpus_per_node > 0 && gpus_per_node <= kMaxSimulatedGpusPerNode &&
              std::int64_t(nodes) * gpus_per_node <= kMaxSimulatedRanks,
          "rfa topology: simulate_keys needs nodes > 0, 1..", kMaxSimulatedGpusPerNode, " GPUs per node and at most ",
          kMaxSimulatedRanks, " ranks");
  const int size = nodes * gpus_per_node;
  const int packages = gpus_per_node > 1 ? 2 : 1;
  const int gpus_per_package = (gpus_per_node + packages - 1) / packages;
  std::vector<RankKey> keys(size);
  for (int r = 0; r < size; ++r) {
    const int node = placement == Placement::block ? r / gpus_per_node : r % nodes;
    const int gpu = placement == Placement::block ? r % gpus_per_node : r / nodes;
    RankKey& key = keys[r];
    key = empty_key();
    key.rank = r;
    set_host(key, "node" + std::to_string(node + 1));
    key.package = gpu / gpus_per_package;
    key.numa_node = key.package;
    char bus_id[RankKey::kPciCapacity];
    std::snprintf(bus_id, sizeof bus_id, "0000:%02x:00.0", 0x10 * (gpu / 2) + gpu % 2 + 1);
    set_field(key.pci_bus_id, bus_id);
  }
  return keys;
}

}  // namespace rfa::topology
