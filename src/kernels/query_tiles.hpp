// SPDX-License-Identifier: BSD-3-Clause
// Where a kernel's query tiles start. A rank's query rows may be several chunks of the sequence
// far apart (zigzag's two, the balanced layout's up to eight: the segments of its position map),
// and a tile holding rows of two chunks is computed against every key tile either chunk sees.
// Where the chunks see different keys (two documents, scattered mask ranges), ending the tile at
// the chunks' boundary computes fewer scores; where they see the same keys (a causal mask's
// neighbouring chunks), the shorter tiles only add padding rows. The rule below decides, tile by
// tile, from the positions alone, so that the kernels (flash_forward.cpp and its bf16 variant)
// and the tile count (kernels/tile_work.hpp) tile alike, and every rank of every build the same.
#pragma once

#include <cstdint>
#include <vector>

#include "core/positions.hpp"
#include "kernels/tile_visibility.hpp"
#include "kernels/tile_work.hpp"

namespace rfa {
namespace kernels {

/// Local rows [begin, end) of one query tile.
struct RowSpan {
  std::int64_t begin = 0, end = 0;
};

/// The query tiles over the local rows of queries at `q` (q.length() rows) against keys at `k`
/// (k.length() rows) under `rule`, in order, into `out`. Tiles of tile.q rows from row 0; where
/// tile.cut_at_segments is set and the mask is not empty, a tile [r0, end) that would cross a
/// boundary b between two segments of `q` (the first one, where it crosses several) ends at b
/// instead when that computes fewer padded scores:
///     pad(b - r0) * seen(r0, b) + pad(end - b) * seen(b, end)  <  pad(end - r0) * seen(r0, end),
/// where seen(a, c) is the key rows of the key tiles (tile.k keys from row 0) that rows [a, c)
/// compute (KeyTileScan: the tiles classify_tile does not find hidden) and pad() rounds rows up
/// to 24, the fp32 kernel's row groups on AVX2 (a constant, so that every build tiles alike).
/// The next tile starts at b. Two scans of the key tiles for each boundary a tile would cross;
/// `operations` (optional) grows by their cost, as computed_scores() counts its own.
void query_tiles(const MaskRule& rule, const PositionMap& q, const PositionMap& k, TileShape tile,
                 std::vector<RowSpan>& out, double* operations = nullptr);

/// The same tiles without a list of them: runs of whole tiles of `tile_rows` rows from each
/// run's first row, the last tile of a run ending at the run's end (a boundary where a tile was
/// cut, or the last row). At most one run more than the query map has segment boundaries, so a
/// block of any length is described in constant space (what the tile count samples from).
class QueryTileRuns {
 public:
  /// Tiles in all runs.
  std::int64_t size() const { return tiles_; }
  /// Tile i, 0 <= i < size().
  RowSpan operator[](std::int64_t i) const;

 private:
  friend void query_tile_runs(const MaskRule&, const PositionMap&, const PositionMap&, TileShape, QueryTileRuns&,
                              double*);
  std::vector<RowSpan> runs_;
  std::vector<std::int64_t> first_tile_;  // the index of each run's first tile
  std::int64_t tile_rows_ = 1, tiles_ = 0;
};

/// query_tiles() as runs; `operations` grows by the same cost.
void query_tile_runs(const MaskRule& rule, const PositionMap& q, const PositionMap& k, TileShape tile,
                     QueryTileRuns& out, double* operations = nullptr);

}  // namespace kernels
}  // namespace rfa
