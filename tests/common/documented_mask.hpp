// SPDX-License-Identifier: BSD-3-Clause
// The attention mask as rfa.h documents it, applied pair by pair without the library's code,
// and the small position maps over whose every sub-range the tile classifications (the host
// kernels' and the CUDA kernels') are held to it.
#pragma once

#include <cstdint>
#include <vector>

#include "core/positions.hpp"
#include "random_mask_ranges.hpp"

namespace rfa_test {

/// Maps of up to 7 rows over positions [0, 20): contiguous, strided as the stripe layout's,
/// two segments as zigzag's, and queries before, on and after the keys.
inline std::vector<rfa::PositionMap> small_position_maps() {
  using rfa::PositionMap;
  using rfa::Segment;
  return {PositionMap::contiguous(0, 7),
          PositionMap::contiguous(5, 6),
          PositionMap::contiguous(13, 7),
          PositionMap::one(Segment{1, 3, 5}),
          PositionMap::one(Segment{2, 3, 4}),
          PositionMap::two(Segment{0, 1, 3}, Segment{12, 1, 3}),
          PositionMap::two(Segment{3, 1, 3}, Segment{9, 1, 3})};
}

/// The causal mask (k <= q), the window (q - k < window; 0: none), documents (a query sees keys
/// of its own; `docs` holds the boundaries, none: one document) and, where `ranges` is given,
/// the union of the ranges.
struct DocumentedMask {
  bool causal = false;
  std::int64_t window = 0;
  const std::vector<std::int64_t>* docs = nullptr;
  const std::vector<rfa_mask_range_t>* ranges = nullptr;

  std::int64_t document(std::int64_t p) const {
    std::int64_t d = 0;
    for (std::size_t i = 1; docs != nullptr && i + 1 < docs->size(); ++i)
      if ((*docs)[i] <= p) d = std::int64_t(i);
    return d;
  }
  bool operator()(std::int64_t q, std::int64_t k) const {
    return (!causal || k <= q) && (window <= 0 || q - k < window) && document(q) == document(k) &&
           (ranges == nullptr || ranges_let_through(*ranges, q, k));
  }
};

}  // namespace rfa_test
