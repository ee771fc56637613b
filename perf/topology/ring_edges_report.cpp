// SPDX-License-Identifier: BSD-3-Clause
#include "ring_edges_report.hpp"

#include <iomanip>

#include "topology/order_policy.hpp"
#include "topology/ring_order.hpp"

namespace rfa::topology {
namespace {

void print_row(std::ostream& out, const std::string& name, const EdgeCounts& edges) {
  out << std::left << std::setw(16) << name << std::right << std::setw(12) << edges.inter_node << std::setw(14)
      << edges.cross_package << std::setw(12) << edges.cross_numa << '\n';
}

}  // namespace

void print_edge_report(std::ostream& out, const std::string& job, const std::vector<RankKey>& keys, bool show_order,
                       const RingOrder* chosen) {
  const std::vector<int> topology = compute_ring_order(keys);
  const std::vector<int> identity = identity_order(static_cast<int>(keys.size()));
  out << "# " << job << ": " << keys.size() << " ranks\n";
  out << std::left << std::setw(16) << "order" << std::right << std::setw(12) << "inter-node" << std::setw(14)
      << "cross-socket" << std::setw(12) << "cross-numa" << '\n';
  print_row(out, "identity", count_edges(keys, identity));
  print_row(out, "topology", count_edges(keys, topology));
  if (chosen)
    print_row(out, std::string("chosen(") + policy_name(chosen->policy_used) + ")", count_edges(keys, chosen->order));
  if (show_order) {
    const std::vector<int>& shown = chosen ? chosen->order : topology;
    out << (chosen ? "chosen" : "topology") << " order (position:rank@host):";
    for (std::size_t p = 0; p < shown.size(); ++p) out << ' ' << p << ':' << shown[p] << '@' << keys[shown[p]].host;
    out << '\n';
  }
}

}  // namespace rfa::topology
