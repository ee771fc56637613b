// SPDX-License-Identifier: BSD-3-Clause
// Which part of a (query tile, key tile) block the mask lets through, decided from the
// position ranges alone so fully masked tiles are skipped and fully visible ones pay no
// per-element test.
#pragma once

#include <Kokkos_Core.hpp>
#include <cstdint>

#include "core/positions.hpp"
#include "rfa/rfa.h"

namespace rfa {
namespace kernels {

enum class TileVisibility { hidden, partial, full };

/// The rule that decides which keys a query sees, on global positions: causal (k <= q) or
/// not, and a sliding window (q - k < window; 0: none). Without the causal mask a window still
/// limits only how far back a query looks: keys ahead of it stay visible.
struct MaskRule {
  bool causal = false;
  std::int64_t window = 0;

  KOKKOS_INLINE_FUNCTION bool any() const { return causal || window > 0; }
  KOKKOS_INLINE_FUNCTION bool visible(std::int64_t q_position, std::int64_t k_position) const {
    return (!causal || k_position <= q_position) && (window <= 0 || q_position - k_position < window);
  }
};

KOKKOS_INLINE_FUNCTION TileVisibility classify_tile(const MaskRule& rule, const PositionMap& q_pos,
                                                    std::int64_t r0, std::int64_t r1,
                                                    const PositionMap& k_pos, std::int64_t c0,
                                                    std::int64_t c1) {
  if (!rule.any()) return TileVisibility::full;
  std::int64_t q_lo, q_hi, k_lo, k_hi;
  q_pos.range(r0, r1, q_lo, q_hi);
  k_pos.range(c0, c1, k_lo, k_hi);
  if (rule.causal && k_lo > q_hi) return TileVisibility::hidden;            // every key after every query
  if (rule.window > 0 && q_lo - k_hi >= rule.window) return TileVisibility::hidden;  // all too far back
  const bool causal_full = !rule.causal || k_hi <= q_lo;                    // every key at or before every query
  const bool window_full = rule.window <= 0 || q_hi - k_lo < rule.window;   // every key within every window
  return causal_full && window_full ? TileVisibility::full : TileVisibility::partial;
}

/// The same for whole blocks, segment by segment: a zigzag rank's rows are two distant
/// chunks, and the range spanning both would see keys neither chunk sees. The ring's schedule
/// skips a step whose block this calls hidden.
KOKKOS_INLINE_FUNCTION TileVisibility classify_blocks(const MaskRule& rule, const PositionMap& q_pos,
                                                      const PositionMap& k_pos) {
  if (!rule.any()) return TileVisibility::full;
  bool any_visible = false, all_full = true;
  for (int a = 0; a < q_pos.count; ++a) {
    if (q_pos.seg[a].length == 0) continue;
    const PositionMap q = PositionMap::one(q_pos.seg[a]);
    for (int b = 0; b < k_pos.count; ++b) {
      if (k_pos.seg[b].length == 0) continue;
      const PositionMap k = PositionMap::one(k_pos.seg[b]);
      const TileVisibility v = classify_tile(rule, q, 0, q.length(), k, 0, k.length());
      any_visible = any_visible || v != TileVisibility::hidden;
      all_full = all_full && v == TileVisibility::full;
    }
  }
  if (!any_visible) return TileVisibility::hidden;
  return all_full ? TileVisibility::full : TileVisibility::partial;
}

}  // namespace kernels
}  // namespace rfa
