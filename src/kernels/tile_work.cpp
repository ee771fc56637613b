// SPDX-License-Identifier: BSD-3-Clause
#include "kernels/tile_work.hpp"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "kernels/key_tile_scan.hpp"
#include "kernels/query_tiles.hpp"

namespace rfa {
namespace kernels {
namespace {

std::int64_t floor_div(std::int64_t x, std::int64_t y) { return x >= 0 ? x / y : -((-x + y - 1) / y); }
std::int64_t ceil_div(std::int64_t x, std::int64_t y) { return -floor_div(-x, y); }

/// Stands for "no bound" in index arithmetic: far beyond any row index, far from overflow.
constexpr std::int64_t kUnbounded = std::int64_t(1) << 60;
/// The rule's window held at kUnbounded, longer than any distance between positions: a longer
/// one hides no more, and positions less it stay inside int64.
std::int64_t bounded_window(const MaskRule& rule) { return std::min(rule.window, kUnbounded); }

/// Beyond this many query tiles, every stride-th is counted and stands for the stride tiles from
/// it, so that a block of any length costs a bounded time (the rows of each are counted as they
/// are).
constexpr std::int64_t kMaxQueryTiles = 4096;

/// The rows of query tiles qt .. qt + stride - 1, which the count of tile qt stands for.
double stood_for(const QueryTileRuns& tiles, std::int64_t qt, std::int64_t stride) {
  const std::int64_t last = std::min(tiles.size(), qt + stride) - 1;
  return double(tiles[last].end - tiles[qt].begin);
}

/// Sum over integers i in [u, v) of max(0, slope * i + intercept), slope in {-1, 0, 1}.
std::int64_t sum_positive(int slope, std::int64_t intercept, std::int64_t u, std::int64_t v) {
  if (slope > 0) u = std::max(u, 1 - intercept);  // i + intercept > 0
  if (slope < 0) v = std::min(v, intercept);      // intercept - i > 0
  if (u >= v) return 0;
  if (slope == 0) return intercept > 0 ? intercept * (v - u) : 0;
  const std::int64_t first = slope * u + intercept, last = slope * (v - 1) + intercept;
  return (v - u) * (first + last) / 2;
}

/// Sum over rows i in [ia, ib) of the number of keys j in [i + lo, i + hi] and in [j0, j1]:
/// the visible scores of query and key segments that share one stride, in index terms.
/// min(i + hi, j1) - max(i + lo, j0) + 1 is linear between the rows where the key range
/// reaches j1 (i >= j1 - hi) and leaves j0 behind (i >= j0 - lo): at most three pieces.
std::int64_t band_count(std::int64_t ia, std::int64_t ib, std::int64_t lo, std::int64_t hi, std::int64_t j0,
                        std::int64_t j1) {
  if (ia >= ib || j0 > j1) return 0;
  const std::int64_t reach_end = std::clamp(j1 - hi, ia, ib), pass_start = std::clamp(j0 - lo, ia, ib);
  std::int64_t cuts[4] = {ia, std::min(reach_end, pass_start), std::max(reach_end, pass_start), ib};
  std::int64_t n = 0;
  for (int piece = 0; piece < 3; ++piece) {
    const std::int64_t u = cuts[piece], v = cuts[piece + 1];
    if (u >= v) continue;
    const bool before_end = u < reach_end, past_start = u >= pass_start;
    const int slope = int(before_end) - int(past_start);
    const std::int64_t intercept = (before_end ? hi : j1) - (past_start ? lo : j0) + 1;
    n += sum_positive(slope, intercept, u, v);
  }
  return n;
}

/// Keys among the segment-local rows [j0, j1) of `ks` whose positions lie in [a, b].
std::int64_t keys_between(const Segment& ks, std::int64_t j0, std::int64_t j1, std::int64_t a, std::int64_t b) {
  if (j0 >= j1 || a > b) return 0;
  // start + j * stride in [a, b]  <=>  j in [ceil((a - start) / stride), floor((b - start) / stride)]
  const std::int64_t lo = std::max(j0, ceil_div(a - ks.start, ks.stride));
  const std::int64_t hi = std::min(j1 - 1, floor_div(b - ks.start, ks.stride));
  return lo <= hi ? hi - lo + 1 : 0;
}

/// The keys a query at `position` may see, [a, b] in positions, before documents.
void key_range(const MaskRule& rule, std::int64_t position, std::int64_t& a, std::int64_t& b) {
  a = rule.window > 0 ? position - bounded_window(rule) + 1 : -kUnbounded;
  b = rule.causal ? position : kUnbounded;
}

/// Scores the rule lets through between query rows [i0, i1) of segment `qs` and key rows
/// [j0, j1) of segment `ks`, the queries all in positions [d0, d1) and the keys seen only
/// there. Segments of one stride count in closed form (band_count); others row by row.
std::int64_t visible_between(const MaskRule& rule, const Segment& qs, std::int64_t i0, std::int64_t i1,
                             const Segment& ks, std::int64_t j0, std::int64_t j1, std::int64_t d0, std::int64_t d1) {
  if (i0 >= i1 || j0 >= j1) return 0;
  if (qs.stride != ks.stride) {
    std::int64_t n = 0;
    for (std::int64_t i = i0; i < i1; ++i) {
      std::int64_t a, b;
      key_range(rule, qs.start + i * qs.stride, a, b);
      n += keys_between(ks, j0, j1, std::max(a, d0), std::min(b, d1 - 1));
    }
    return n;
  }
  // Query i sees key j when j - i lies in [lo, hi] (causal: k_j <= q_i; window: q_i - k_j < w),
  // and j lies in the keys' rows of positions [d0, d1).
  const std::int64_t s = qs.stride, offset = qs.start - ks.start;
  const std::int64_t hi = rule.causal ? floor_div(offset, s) : kUnbounded;
  const std::int64_t lo = rule.window > 0 ? ceil_div(offset - bounded_window(rule) + 1, s) : -kUnbounded;
  const std::int64_t first = std::max(j0, ceil_div(d0 - ks.start, s)),
                     last = std::min(j1 - 1, floor_div(d1 - 1 - ks.start, s));
  return band_count(i0, i1, lo, hi, first, last);
}

/// Scores the rule lets through in the tile of query rows [r0, r1) and key rows [c0, c1).
double visible_in_tile(const MaskRule& rule, const PositionMap& q, std::int64_t r0, std::int64_t r1,
                       const PositionMap& k, std::int64_t c0, std::int64_t c1) {
  std::int64_t n = 0, q_base = 0;
  for (int qi = 0; qi < q.count; ++qi) {
    const Segment& qs = q.seg[qi];
    const std::int64_t i0 = std::max(r0, q_base) - q_base, i1 = std::min(r1, q_base + qs.length) - q_base;
    q_base += qs.length;
    if (i0 >= i1) continue;
    // The queries' documents, each with the rows it holds; without documents, one of every position.
    std::int64_t d_first = 0, d_last = 0;
    if (rule.documents()) {
      d_first = rule.document_of(qs.start + i0 * qs.stride);
      d_last = rule.document_of(qs.start + (i1 - 1) * qs.stride);
    }
    for (std::int64_t d = d_first; d <= d_last; ++d) {
      std::int64_t d0 = -kUnbounded, d1 = kUnbounded, ia = i0, ib = i1;
      if (rule.documents()) {
        d0 = rule.doc_bounds[d];
        d1 = rule.doc_bounds[d + 1];
        ia = std::max(i0, ceil_div(d0 - qs.start, qs.stride));
        ib = std::min(i1, ceil_div(d1 - qs.start, qs.stride));
      }
      std::int64_t k_base = 0;
      for (int ki = 0; ki < k.count; ++ki) {
        const Segment& ks = k.seg[ki];
        const std::int64_t j0 = std::max(c0, k_base) - k_base, j1 = std::min(c1, k_base + ks.length) - k_base;
        k_base += ks.length;
        n += visible_between(rule, qs, ia, ib, ks, j0, j1, d0, d1);
      }
    }
  }
  return double(n);
}

/// Keys of rows [j0, j1) of segment `ks` that query position `qp` sees under a rule with
/// ranges: the union of its band's entries' key intervals (overlaps counted once), cut to the
/// causal mask's, the window's and its document's interval. `spans` is scratch.
std::int64_t range_row_count(const MaskRule& rule, std::int64_t qp, const Segment& ks, std::int64_t j0, std::int64_t j1,
                             std::vector<std::pair<std::int64_t, std::int64_t>>& spans) {
  if (j0 >= j1) return 0;
  std::int64_t a, b;
  key_range(rule, qp, a, b);
  if (rule.documents()) {
    const std::int64_t d = rule.document_of(qp);
    a = std::max(a, rule.doc_bounds[d]);
    b = std::min(b, rule.doc_bounds[d + 1] - 1);
  }
  visible_key_intervals(rule.ranges, qp, a, b, spans);
  std::int64_t n = 0;
  for (const auto& [first, last] : spans) n += keys_between(ks, j0, j1, first, last);
  return n;
}

/// Scores a rule with ranges lets through in the tile of query rows [r0, r1) and key rows
/// [c0, c1), row by row.
double visible_in_tile_with_ranges(const MaskRule& rule, const PositionMap& q, std::int64_t r0, std::int64_t r1,
                                   const PositionMap& k, std::int64_t c0, std::int64_t c1,
                                   std::vector<std::pair<std::int64_t, std::int64_t>>& spans) {
  std::int64_t n = 0;
  for (std::int64_t r = r0; r < r1; ++r) {
    const std::int64_t qp = q(r);
    std::int64_t k_base = 0;
    for (int ki = 0; ki < k.count; ++ki) {
      const Segment& ks = k.seg[ki];
      const std::int64_t j0 = std::max(c0, k_base) - k_base, j1 = std::min(c1, k_base + ks.length) - k_base;
      k_base += ks.length;
      n += range_row_count(rule, qp, ks, j0, j1, spans);
    }
  }
  return double(n);
}

/// count_tile_work, and with count_visible false without the partial tiles' visible scores;
/// adds the count's own cost to `operations` (computed_scores()).
TileWork count_tiles(const MaskRule& rule, const PositionMap& q, const PositionMap& k, TileShape tile,
                     bool count_visible, double& operations) {
  require(tile.q > 0 && tile.k > 0, "tile sizes must be positive, got ", tile.q, " x ", tile.k);
  TileWork w;
  const std::int64_t Lq = q.length(), Lk = k.length();
  if (Lq == 0 || Lk == 0) return w;
  if (!rule.any()) {
    w.full = double(Lq) * double(Lk);
    w.rows = double(Lq);
    w.keys = double(Lk);
    return w;
  }
  QueryTileRuns tiles;
  query_tile_runs(rule, q, k, tile, tiles, &operations);
  KeyTileScan scan(rule, q, k, tile.k);
  const std::int64_t nq = tiles.size(), nk = scan.key_tiles();
  const std::int64_t stride = (nq + kMaxQueryTiles - 1) / kMaxQueryTiles;
  std::int64_t first_key_tile = nk, end_key_tile = 0;  // the key tiles any query tile computes
  std::vector<std::pair<std::int64_t, std::int64_t>> spans;
  for (std::int64_t qt = 0; qt < nq; qt += stride) {
    const RowSpan span = tiles[qt];
    const std::int64_t r0 = span.begin, r1 = span.end;
    const double rows = stood_for(tiles, qt, stride);
    const double weight = rows / double(r1 - r0);
    scan.scan(r0, r1, operations);
    if (scan.visible().empty()) continue;
    w.rows += rows;
    for (const auto& [a, b] : scan.visible()) {
      first_key_tile = std::min(first_key_tile, a);
      end_key_tile = std::max(end_key_tile, b);
    }
    w.full += rows * scan.columns(scan.full());
    w.partial += rows * scan.columns(scan.partial());
    if (!count_visible) continue;
    for (const auto& [from, to] : scan.partial()) {
      if (rule.ranges.on) {
        for (std::int64_t kt = from; kt < to; ++kt)
          w.partial_visible += weight * visible_in_tile_with_ranges(rule, q, r0, r1, k, kt * tile.k,
                                                                    std::min(Lk, (kt + 1) * tile.k), spans);
        continue;
      }
      // Of a run of partial tiles longer than kMaxPartialTiles, every step-th is counted for the
      // step tiles from it.
      constexpr std::int64_t kMaxPartialTiles = 256;
      const std::int64_t step = std::max<std::int64_t>(1, (to - from + kMaxPartialTiles - 1) / kMaxPartialTiles);
      for (std::int64_t kt = from; kt < to; kt += step)
        w.partial_visible += weight * double(std::min(step, to - kt)) *
                             visible_in_tile(rule, q, r0, r1, k, kt * tile.k, std::min(Lk, (kt + 1) * tile.k));
    }
  }
  w.keys = scan.columns(first_key_tile, end_key_tile);
  return w;
}

}  // namespace

TileWork count_tile_work(const MaskRule& rule, const PositionMap& q, const PositionMap& k, TileShape tile) {
  double operations = 0;
  return count_tiles(rule, q, k, tile, true, operations);
}

double computed_scores(const MaskRule& rule, const PositionMap& q, const PositionMap& k, TileShape tile,
                       double* operations) {
  double own = 0;
  return count_tiles(rule, q, k, tile, false, operations != nullptr ? *operations : own).computed();
}

}  // namespace kernels
}  // namespace rfa
