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

void query_tiles(const MaskRule& rule, const PositionMap& q, const PositionMap& k, TileShape tile,
                 std::vector<RowSpan>& out, double* operations) {
  require(tile.q > 0 && tile.k > 0, "tile sizes must be positive, got ", tile.q, " x ", tile.k);
  out.clear();
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
  int next_bound = 0;
  for (std::int64_t r0 = 0; r0 < rows;) {
    std::int64_t end = std::min(rows, r0 + tile.q);
    while (next_bound < n_bounds && bounds[next_bound] <= r0) ++next_bound;
    if (may_cut && next_bound < n_bounds && bounds[next_bound] < end) {
      const std::int64_t b = bounds[next_bound];
      scan->scan(r0, b, ops);
      const double first = scan->columns(scan->visible());
      either = scan->visible();
      scan->scan(b, end, ops);
      const double second = scan->columns(scan->visible());
      either.insert(either.end(), scan->visible().begin(), scan->visible().end());
      if (padded(b - r0) * first + padded(end - b) * second < padded(end - r0) * scan->columns(merge_intervals(either)))
        end = b;
    }
    out.push_back({r0, end});
    r0 = end;
  }
}

}  // namespace kernels
}  // namespace rfa
