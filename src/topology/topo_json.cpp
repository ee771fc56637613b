// SPDX-License-Identifier: BSD-3-Clause
#include "topology/topo_json.hpp"

#include <cstdio>

#include "core/text_stream.hpp"
#include "topology/order_policy.hpp"
#include "topology/ring_order.hpp"

namespace rfa::topology {
namespace {

std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
      out += escaped;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string edges_to_json(const EdgeCounts& edges) {
  TextStream os;
  os << "{\"inter_node\": " << edges.inter_node << ", \"cross_package\": " << edges.cross_package
     << ", \"cross_numa\": " << edges.cross_numa << "}";
  return os.str();
}

}  // namespace

std::string keys_to_json(const std::vector<RankKey>& keys) {
  TextStream os;
  os << "[";
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const RankKey& k = keys[i];
    os << (i ? ",\n    " : "\n    ") << "{\"rank\": " << k.rank << ", \"host\": " << quoted(k.host)
       << ", \"host_hash\": \"" << std::hex << k.host_hash << std::dec << "\""
       << ", \"package\": " << k.package << ", \"numa_node\": " << k.numa_node
       << ", \"pci_bus_id\": " << quoted(k.pci_bus_id) << ", \"nic\": " << quoted(k.nic)
       << ", \"slurm_topology_addr\": " << quoted(k.slurm_topology_addr)
       << ", \"from_hwloc\": " << ((k.flags & kKeyFromHwloc) ? "true" : "false")
       << ", \"gpu_found\": " << ((k.flags & kKeyGpuFound) ? "true" : "false")
       << ", \"locality_from_gpu\": " << ((k.flags & kKeyLocalityFromGpu) ? "true" : "false") << "}";
  }
  os << (keys.empty() ? "]" : "\n  ]");
  return os.str();
}

std::string to_json(const RingOrder& ring) {
  TextStream os;
  os << "{\n  \"policy\": " << quoted(policy_name(ring.policy_used))
     << ",\n  \"order_file\": " << quoted(ring.order_file) << ",\n  \"size\": " << ring.keys.size()
     << ",\n  \"order\": [";
  for (std::size_t p = 0; p < ring.order.size(); ++p) os << (p ? ", " : "") << ring.order[p];
  os << "],\n  \"keys\": " << keys_to_json(ring.keys);
  if (ring.order.size() == ring.keys.size() && is_single_cycle(ring.order)) {
    os << ",\n  \"edges\": {\"chosen\": " << edges_to_json(count_edges(ring.keys, ring.order)) << ", \"identity\": "
       << edges_to_json(count_edges(ring.keys, identity_order(static_cast<int>(ring.keys.size())))) << "}";
  }
  os << "\n}";
  return os.str();
}

}  // namespace rfa::topology
