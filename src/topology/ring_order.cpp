// SPDX-License-Identifier: BSD-3-Clause
#include "topology/ring_order.hpp"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <string>

#include "core/error.hpp"
#include "topology/natural_order.hpp"

namespace rfa::topology {
namespace {

// Natural order of two nodes, each represented by one of its keys.
bool node_less(const RankKey& a, const RankKey& b, bool by_slurm_address) {
  if (by_slurm_address) {
    std::string sa = a.slurm_topology_addr, sb = b.slurm_topology_addr;
    if (sa != sb) return natural_less(sa, sb);
  }
  std::string ha = a.host, hb = b.host;
  if (ha != hb) return natural_less(ha, hb);
  return a.host_hash < b.host_hash;  // truncated names that collide
}

// Position inside a node: package, NUMA, PCI bus id (fixed-width hex, so string order is bus
// order), then rank for a total order.
bool within_node_less(const RankKey& a, int rank_a, const RankKey& b, int rank_b) {
  if (a.package != b.package) return a.package < b.package;
  if (a.numa_node != b.numa_node) return a.numa_node < b.numa_node;
  int pci = std::strncmp(a.pci_bus_id, b.pci_bus_id, RankKey::kPciCapacity);
  if (pci != 0) return pci < 0;
  return rank_a < rank_b;
}

/// One representative (the lowest rank) per host, in order of first appearance; node_of[r] is
/// rank r's index among them.
std::vector<int> host_representatives(const std::vector<RankKey>& keys, std::vector<int>& node_of) {
  std::vector<int> representatives;
  node_of.assign(keys.size(), 0);
  for (int r = 0; r < static_cast<int>(keys.size()); ++r) {
    auto it = std::find_if(representatives.begin(), representatives.end(),
                           [&](int rep) { return same_host(keys[rep], keys[r]); });
    node_of[r] = static_cast<int>(it - representatives.begin());
    if (it == representatives.end()) representatives.push_back(r);
  }
  return representatives;
}

}  // namespace

std::vector<int> compute_ring_order(const std::vector<RankKey>& keys) {
  const int size = static_cast<int>(keys.size());
  bool all_have_slurm_address = size > 0;
  for (const RankKey& key : keys) all_have_slurm_address &= key.slurm_topology_addr[0] != '\0';

  // One representative (the lowest rank) per node, and each rank's node.
  std::vector<int> node_of;
  const std::vector<int> representatives = host_representatives(keys, node_of);
  std::vector<int> node_rank(representatives.size());
  {
    std::vector<int> nodes(representatives.size());
    std::iota(nodes.begin(), nodes.end(), 0);
    std::sort(nodes.begin(), nodes.end(), [&](int x, int y) {
      return node_less(keys[representatives[x]], keys[representatives[y]], all_have_slurm_address);
    });
    for (std::size_t i = 0; i < nodes.size(); ++i) node_rank[nodes[i]] = static_cast<int>(i);
  }

  std::vector<int> order = identity_order(size);
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    if (node_rank[node_of[a]] != node_rank[node_of[b]]) return node_rank[node_of[a]] < node_rank[node_of[b]];
    return within_node_less(keys[a], a, keys[b], b);
  });
  return order;
}

bool is_single_cycle(const std::vector<int>& order) {
  std::vector<bool> seen(order.size(), false);
  for (int rank : order) {
    if (rank < 0 || rank >= static_cast<int>(order.size()) || seen[rank]) return false;
    seen[rank] = true;
  }
  return true;
}

std::vector<int> identity_order(int size) {
  std::vector<int> order(size > 0 ? size : 0);
  std::iota(order.begin(), order.end(), 0);
  return order;
}

int ring_position(const std::vector<int>& order, int rank) {
  auto it = std::find(order.begin(), order.end(), rank);
  require(it != order.end(), "rfa topology: rank ", rank, " is not in the ring order of ", order.size(), " ranks");
  return static_cast<int>(it - order.begin());
}

EdgeCounts count_edges(const std::vector<RankKey>& keys, const std::vector<int>& order) {
  require(order.size() == keys.size() && is_single_cycle(order), "rfa topology: count_edges needs an order over the ",
          keys.size(), " keys");
  EdgeCounts counts;
  const std::size_t size = order.size();
  if (size < 2) return counts;
  for (std::size_t p = 0; p < size; ++p) {
    const RankKey& from = keys[order[p]];
    const RankKey& to = keys[order[(p + 1) % size]];
    if (!same_host(from, to)) {
      ++counts.inter_node;
      continue;
    }
    const bool cross_package = from.package >= 0 && to.package >= 0 && from.package != to.package;
    if (cross_package) ++counts.cross_package;
    // Another socket's memory is another NUMA node's, known or not.
    if (cross_package || (from.numa_node >= 0 && to.numa_node >= 0 && from.numa_node != to.numa_node))
      ++counts.cross_numa;
  }
  return counts;
}

std::string order_by_host(const RingOrder& order, std::size_t max_runs) {
  const std::size_t size = order.order.size();
  std::string text;
  if (order.keys.size() != size) {
    for (std::size_t p = 0; p < size; ++p) text += (p ? " " : "") + std::to_string(order.order[p]);
    return text + " (no host names gathered)";
  }
  std::size_t runs = 0;
  for (std::size_t p = 0; p < size; ++p) {
    const RankKey& key = order.keys[std::size_t(order.order[p])];
    const bool new_run = p == 0 || !same_host(order.keys[std::size_t(order.order[p - 1])], key);
    if (new_run) {
      if (p > 0 && runs <= max_runs) text += "}";
      if (++runs <= max_runs)
        text +=
            std::string(runs > 1 ? " " : "") + std::string(key.host, strnlen(key.host, RankKey::kHostCapacity)) + "{";
    } else if (runs <= max_runs) {
      text += ",";
    }
    if (runs <= max_runs) text += std::to_string(order.order[p]);
  }
  if (size > 0 && runs <= max_runs) text += "}";
  if (runs > max_runs) text += " and " + std::to_string(runs - max_runs) + " more runs";
  const int edges = count_edges(order.keys, order.order).inter_node;
  return text + ": " + std::to_string(edges) + " inter-node edge" + (edges == 1 ? "" : "s");
}

int most_ranks_on_one_host(const RingOrder& order) {
  std::vector<int> node_of;
  std::vector<int> per_host(host_representatives(order.keys, node_of).size(), 0);
  int most = 1;
  for (int node : node_of) most = std::max(most, ++per_host[std::size_t(node)]);
  return most;
}

int host_count(const RingOrder& order) {
  std::vector<int> node_of;
  return std::max<int>(1, int(host_representatives(order.keys, node_of).size()));
}

}  // namespace rfa::topology
