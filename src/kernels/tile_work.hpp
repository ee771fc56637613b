// SPDX-License-Identifier: BSD-3-Clause
// How much work a block kernel does for one (queries, keys) block: the scores of the tiles it
// computes, counted the way the kernels tile and classify (kernels/tile_visibility.hpp): query
// tiles of up to tile.q local rows, placed as kernels/query_tiles.hpp places them, by key tiles
// of tile.k local rows, each hidden (skipped), full (no mask) or partial (masked), decided from
// the position ranges alone. The performance model
// (model/performance_model.hpp) turns these counts into time; the balanced layout's solver
// (engine/placement_refinement.hpp) evens them across ranks.
//
// Every layout's position map is increasing, so along a row of tiles the hidden ones form a
// prefix and a suffix and the full ones an interval: each query tile costs a few binary searches,
// not a pass over the key tiles (kernels/key_tile_scan.hpp). Inside the few tiles the mask cuts, the visible scores are
// counted row by row (the host kernels skip what the mask hides in them), each row's keys an
// interval of positions counted by arithmetic on the map's segments.
#pragma once

#include <cstdint>

#include "core/positions.hpp"
#include "kernels/tile_visibility.hpp"

namespace rfa {
namespace kernels {

/// A kernel's tile: query rows by key rows, and where its query tiles start.
struct TileShape {
  int q = 0, k = 0;
  /// Whether a query tile may end early, at a boundary between two segments of the query map,
  /// where that computes fewer scores (kernels/query_tiles.hpp); otherwise query tiles start
  /// every q rows from row 0.
  bool cut_at_segments = false;
};

/// The host kernels' tiles (flash_forward.cpp, flash_backward.cpp; the bf16 forward's key
/// tiles are longer, 128): the forward's 192 query rows by 96 keys, its query tiles cut at
/// segment boundaries where that pays; the backward's 96 by 192.
inline constexpr TileShape kHostForwardTile{192, 96, true}, kHostBackwardTile{96, 192, false};

/// Scores (query row, key row pairs) in the tiles a kernel computes, by kind of tile.
struct TileWork {
  double full = 0;             ///< in tiles the mask leaves whole
  double partial = 0;          ///< in tiles the mask cuts
  double partial_visible = 0;  ///< of those, the scores the mask lets through
  double rows = 0;             ///< query rows of the query tiles that compute any tile
  double keys = 0;             ///< key rows of the key tiles any query tile computes
  double computed() const { return full + partial; }
};

/// The tiles a kernel computes for queries at `q` against keys at `k` (local rows in the maps'
/// order; query tiles as query_tiles() places them, key tiles from row 0), under `rule`. Both
/// maps must be increasing (every layout's is).
TileWork count_tile_work(const MaskRule& rule, const PositionMap& q, const PositionMap& k, TileShape tile);

/// The scores of the tiles a kernel computes (count_tile_work(...).computed()), without
/// counting what the mask lets through inside the cut tiles: the part of the count that costs
/// most under a mask given as ranges, which a caller comparing placements does not need.
/// `operations` (optional) grows by the count's own cost: the binary-search steps, tile
/// classifications and range entries it visits, a measure of its time that is the same on
/// every machine.
double computed_scores(const MaskRule& rule, const PositionMap& q, const PositionMap& k, TileShape tile,
                       double* operations = nullptr);

}  // namespace kernels
}  // namespace rfa
