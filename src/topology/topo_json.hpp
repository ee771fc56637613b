// SPDX-License-Identifier: BSD-3-Clause
// Provenance: the gathered keys and the chosen order as one JSON document (RFA_TOPO_DUMP).
#pragma once

#include <string>
#include <vector>

#include "topology/rank_key.hpp"
#include "topology/ring_order.hpp"

namespace rfa::topology {

/// JSON array of the keys, one object per rank.
std::string keys_to_json(const std::vector<RankKey>& keys);

/// {"policy", "order_file", "size", "order", "keys", "edges": {"chosen", "identity"}}.
std::string to_json(const RingOrder& ring);

}  // namespace rfa::topology
