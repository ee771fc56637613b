// SPDX-License-Identifier: BSD-3-Clause
// How much work a block kernel does for one (queries, keys) block: the scores of the tiles it
// computes, counted the way the kernels tile and classify (kernels/tile_visibility.hpp): tiles
// of tile_q local query rows by tile_k local key rows, each hidden (skipped), full (no mask) or
// partial (masked), decided from the position ranges alone. The performance model
// (model/performance_model.hpp) turns these counts into time.
//
// Every layout's position map is increasing, so along a row of tiles the hidden ones form a
// prefix and a suffix and the full ones an interval: each query tile costs a few binary searches,
// not a pass over the key tiles. Inside the few tiles the mask cuts, the visible scores are
// counted row by row (the host kernels skip what the mask hides in them), each row's keys an
// interval of positions counted by arithmetic on the map's segments.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "core/positions.hpp"
#include "kernels/tile_visibility.hpp"

namespace rfa {
namespace model {

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
/// order, tiles from row 0), under `rule`. Both maps must be increasing (every layout's is).
TileWork count_tile_work(const kernels::MaskRule& rule, const PositionMap& q, const PositionMap& k, int tile_q,
                         int tile_k);

/// count_tile_work(), remembered. Under a rule that tests only differences of positions (the
/// causal mask and the window: no documents, no ranges), a block's work is that of its two maps
/// moved together so that their first position is 0, which every pair of ranks at the same
/// distance shares (the ring's blocks on a contiguous layout: P distinct blocks of P x P).
/// Other rules are counted each time.
class TileWorkMemo {
 public:
  TileWork count(const kernels::MaskRule& rule, const PositionMap& q, const PositionMap& k, int tile_q, int tile_k);
  /// Blocks counted, and of those answered from memory.
  std::int64_t asked() const { return asked_; }
  std::int64_t remembered() const { return remembered_; }

 private:
  std::map<std::vector<std::int64_t>, TileWork> known_;
  std::int64_t asked_ = 0, remembered_ = 0;
};

}  // namespace model
}  // namespace rfa
