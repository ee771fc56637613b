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

KOKKOS_INLINE_FUNCTION TileVisibility classify_tile(rfa_mask_t mask, const PositionMap& q_pos,
                                                    std::int64_t r0, std::int64_t r1,
                                                    const PositionMap& k_pos, std::int64_t c0,
                                                    std::int64_t c1) {
  if (mask == RFA_MASK_NONE) return TileVisibility::full;
  std::int64_t q_lo, q_hi, k_lo, k_hi;
  q_pos.range(r0, r1, q_lo, q_hi);
  k_pos.range(c0, c1, k_lo, k_hi);
  if (k_lo > q_hi) return TileVisibility::hidden;  // every key is after every query
  if (k_hi <= q_lo) return TileVisibility::full;   // every key is at or before every query
  return TileVisibility::partial;
}

/// Per-element rule of the causal mask (the only element-wise mask so far).
KOKKOS_INLINE_FUNCTION bool key_visible(std::int64_t q_position, std::int64_t k_position) {
  return k_position <= q_position;
}

}  // namespace kernels
}  // namespace rfa
