// SPDX-License-Identifier: BSD-3-Clause
// Synthetic keys for the ordering tests.
#pragma once

#include <string>
#include <vector>

#include "topology/rank_key.hpp"

namespace rfa::topology::testing {

inline RankKey synthetic_key(const std::string& host, int package = -1, int numa = -1, const std::string& pci = "",
                             const std::string& slurm_addr = "") {
  RankKey key = empty_key();
  set_host(key, host);
  key.package = package;
  key.numa_node = numa;
  set_field(key.pci_bus_id, pci);
  set_field(key.slurm_topology_addr, slurm_addr);
  return key;
}

/// Sets keys[i].rank = i, as gather_keys() does.
inline std::vector<RankKey> numbered(std::vector<RankKey> keys) {
  for (std::size_t i = 0; i < keys.size(); ++i) keys[i].rank = static_cast<int>(i);
  return keys;
}

}  // namespace rfa::topology::testing
