// SPDX-License-Identifier: BSD-3-Clause
#include "kernels/query_tiles.hpp"

#include <algorithm>
#include <optional>

#include "core/error.hpp"
#include "kernels/key_tile_scan.hpp"

namespace rfa {
namespace kernels {
namespace {

/// Rows rounded up to the fp32 forward's row groups on AVX2 builds (flash_forward.cpp).
constexpr std::int64_t kDecisionRowGroup = 24;

double padded(std::int64_t rows) {
  return double((rows + kDecisionRowGroup - 1) / kDecisionRowGroup * kDecisionRowGroup);
}

}  // namespace

RowSpan QueryTileRuns::operator[](std::int64_t i) const {
  // The run holding tile i: the last whose first tile is at or before it (runs are few).
  std::size_t r = std::size_t(std::upper_bound(first_tile_.begin(), first_tile_.end(), i) - first_tile_.begin()) - 1;
  const std::int64_t begin = runs_[r].begin + (i - first_tile_[r]) * tile_rows_;
  return {begin, std::min(begin + tile_rows_, runs_[r].end)};
}

void query_tile_runs(const MaskRule& rule, const PositionMap& q, const PositionMap& k, TileShape tile,
                     QueryTileRuns& out, double* operations) {
  require(tile.q > 0 && tile.k > 0, "tile sizes must be positive, got ", tile.q, " x ", tile.k);
  out.runs_.clear();
  out.first_tile_.clear();
  out.tile_rows_ = tile.q;
  out.tiles_ = 0;
  const std::int64_t rows = q.length();
  // The boundaries between segments inside the rows.
  std::int64_t bounds[PositionMap::kMaxSegments];
  int n_bounds = 0;
  std::int64_t base = 0;
  for (int s = 0; s + 1 < q.count; ++s) {
    base += q.seg[s].length;
    if (base > 0 && base < rows) bounds[n_bounds++] = base;
  }
  const bool may_cut = tile.cut_at_segments && rule.any() && n_bounds > 0 && k.length() > 0;
  double own = 0;
  double& ops = operations != nullptr ? *operations : own;
  std::optional<KeyTileScan> scan;
  if (may_cut) scan.emplace(rule, q, k, tile.k);
  std::vector<TileInterval> either;
  // Tiles run regularly from run_begin; a boundary inside a tile is weighed once (the first
  // boundary a tile crosses), and a cut there starts the next run at it.
  std::int64_t run_begin = 0, weighed_tile = -1;
  for (int nb = 0; may_cut && nb < n_bounds; ++nb) {
    const std::int64_t b = bounds[nb];
    if (b <= run_begin) continue;
    const std::int64_t r0 = run_begin + (b - run_begin) / tile.q * tile.q;
    if (r0 == b || r0 == weighed_tile) continue;  // a tile starts at b, or b's tile was weighed
    weighed_tile = r0;
    const std::int64_t end = std::min(rows, r0 + tile.q);
    scan->scan(r0, b, ops);
    const double first = scan->columns(scan->visible());
    either = scan->visible();
    scan->scan(b, end, ops);
    const double second = scan->columns(scan->visible());
    either.insert(either.end(), scan->visible().begin(), scan->visible().end());
    if (padded(b - r0) * first + padded(end - b) * second < padded(end - r0) * scan->columns(merge_intervals(either))) {
      out.runs_.push_back({run_begin, b});
      run_begin = b;
      weighed_tile = -1;
    }
  }
  out.runs_.push_back({run_begin, rows});
  for (const RowSpan& run : out.runs_) {
    out.first_tile_.push_back(out.tiles_);
    out.tiles_ += (run.end - run.begin + tile.q - 1) / tile.q;
  }
}

void query_tiles(const MaskRule& rule, const PositionMap& q, const PositionMap& k, TileShape tile,
                 std::vector<RowSpan>& out, double* operations) {
  QueryTileRuns runs;
  query_tile_runs(rule, q, k, tile, runs, operations);
  out.clear();
  out.reserve(std::size_t(runs.size()));
  for (std::int64_t i = 0; i < runs.size(); ++i) out.push_back(runs[i]);
}

}  // namespace kernels
}  // namespace rfa
