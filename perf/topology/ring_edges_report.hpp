// SPDX-License-Identifier: BSD-3-Clause
// The table rfa_ring_edges prints: edge counts of identity and topology order for one key set.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "topology/rank_key.hpp"
#include "topology/ring_order.hpp"

namespace rfa::topology {

/// Writes a header line naming the job, then one row per order:
///   order       inter-node  cross-socket  cross-numa
///   identity            16             0           0
///   topology             4             4           4
///   chosen(file)         ...                                (when `chosen` is given)
/// and, with show_order, the topology order itself (or the chosen one when given).
void print_edge_report(std::ostream& out, const std::string& job, const std::vector<RankKey>& keys, bool show_order,
                       const RingOrder* chosen = nullptr);

}  // namespace rfa::topology
