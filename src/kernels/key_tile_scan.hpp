// SPDX-License-Identifier: BSD-3-Clause
// Which key tiles a range of query rows computes, and which of them the mask leaves whole or
// cuts: what the kernels decide tile by tile with classify_tile (kernels/tile_visibility.hpp),
// found without visiting every key tile. Every layout's position map is increasing, so along the
// key tiles inside one key segment the hidden ones form a prefix and a suffix and the full ones
// an interval: a few binary searches per piece of the query rows (their rows in one segment).
// Key tiles that straddle two key segments are classified one by one; under a mask given as
// ranges, the tiles between the first and the last key the pieces' bands reach. The tile count
// (kernels/tile_work.hpp) and the query tiles' rule (kernels/query_tiles.hpp) both ask it.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "core/positions.hpp"
#include "kernels/tile_visibility.hpp"

namespace rfa {
namespace kernels {

/// Key tiles [first, second) by index.
using TileInterval = std::pair<std::int64_t, std::int64_t>;

/// Sorts the intervals of `v` from index `from` on and merges those that overlap or touch;
/// returns `v`.
std::vector<TileInterval>& merge_intervals(std::vector<TileInterval>& v, std::size_t from = 0);

class KeyTileScan {
 public:
  /// Key tiles of `tile_k` rows from row 0 of `k` (k.length() rows). `rule`, `q` and `k` must
  /// outlive the scan; both maps must be increasing.
  KeyTileScan(const MaskRule& rule, const PositionMap& q, const PositionMap& k, int tile_k);

  /// Classifies the key tiles for the query rows [r0, r1): visible() then holds the tiles some
  /// row may see, full() those every row sees whole, partial() the rest of the visible ones,
  /// each as disjoint intervals. Adds what it visits (binary-search steps, tile classifications,
  /// bands and range entries) to `operations`.
  void scan(std::int64_t r0, std::int64_t r1, double& operations);

  const std::vector<TileInterval>& visible() const { return visible_; }
  const std::vector<TileInterval>& full() const { return full_; }
  const std::vector<TileInterval>& partial() const { return partial_; }

  /// Key rows in tiles [a, b): whole tiles but the last, which may be short.
  double columns(std::int64_t a, std::int64_t b) const;
  /// Key rows in the tiles of disjoint intervals.
  double columns(const std::vector<TileInterval>& tiles) const;

  std::int64_t key_tiles() const { return nk_; }

 private:
  void scan_rule(std::int64_t r0, std::int64_t r1, double& operations);
  void scan_ranges(std::int64_t r0, std::int64_t r1, double& operations);
  std::int64_t key_lo(std::int64_t kt) const;
  std::int64_t key_hi(std::int64_t kt) const;

  const MaskRule& rule_;
  const PositionMap& q_;
  const PositionMap& k_;
  std::int64_t tile_k_ = 1, Lk_ = 0, nk_ = 0;
  std::vector<TileInterval> inside_;      // the key tiles inside one key segment, per segment
  std::vector<std::int64_t> straddling_;  // the key tiles across two key segments
  double searches_ = 0;                   // what a piece's binary searches visit, at most
  std::vector<TileInterval> visible_, full_, partial_, runs_;
};

}  // namespace kernels
}  // namespace rfa
