// SPDX-License-Identifier: BSD-3-Clause
// Brute-force helpers of the tests that check placements and plans pair by pair: a position
// map's rows, and whether a rule lets a query see a key.
#pragma once

#include <cstdint>
#include <vector>

#include "core/positions.hpp"
#include "kernels/tile_visibility.hpp"

namespace rfa::engine {

/// The global positions of `m`'s local rows, in order.
inline std::vector<std::int64_t> rows_of(const PositionMap& m) {
  std::vector<std::int64_t> rows;
  for (std::int64_t i = 0; i < m.length(); ++i) rows.push_back(m(i));
  return rows;
}

/// Whether `rule` lets query position q see key position k (every part: causal, window,
/// documents, ranges), tested pair by pair.
inline bool sees(const kernels::MaskRule& rule, std::int64_t q, std::int64_t k) {
  if (!rule.visible(q, k) || rule.document_of(q) != rule.document_of(k)) return false;
  return !rule.ranges.on || rule.ranges.visible(q, k);
}

}  // namespace rfa::engine
