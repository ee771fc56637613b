// SPDX-License-Identifier: BSD-3-Clause
#include "kernels/tile_work.hpp"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "core/error.hpp"

namespace rfa {
namespace kernels {
namespace {

/// The first i in [from, to) with pred(i) true, for pred false then true along i; to if none.
template <class Pred>
std::int64_t first_true(std::int64_t from, std::int64_t to, Pred&& pred) {
  std::int64_t lo = from, hi = to;
  while (lo < hi) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    if (pred(mid))
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

std::int64_t floor_div(std::int64_t x, std::int64_t y) { return x >= 0 ? x / y : -((-x + y - 1) / y); }
std::int64_t ceil_div(std::int64_t x, std::int64_t y) { return -floor_div(-x, y); }

/// The positions of the rows of a tile that lie in one segment of a map: the lowest and the
/// highest (each segment increases).
struct Piece {
  std::int64_t lo = 0, hi = 0;
};

/// The pieces of rows [r0, r1) of `m`, one per segment they reach (segment_piece), into `out`;
/// their number.
int tile_pieces(const PositionMap& m, std::int64_t r0, std::int64_t r1, Piece* out) {
  int n = 0;
  std::int64_t base = 0;
  for (int s = 0; s < m.count && base < r1; base += m.seg[s++].length)
    if (segment_piece(m.seg[s], base, r0, r1, out[n].lo, out[n].hi)) ++n;
  return n;
}

/// Stands for "no bound" in index arithmetic: far beyond any row index, far from overflow.
constexpr std::int64_t kUnbounded = std::int64_t(1) << 60;

/// Beyond this many query tiles, every stride-th is counted and stands for the stride tiles from
/// it, so that a block of any length costs a bounded time (the rows of each are counted as they
/// are).
constexpr std::int64_t kMaxQueryTiles = 4096;

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
  a = rule.window > 0 ? position - rule.window + 1 : -kUnbounded;
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
  const std::int64_t lo = rule.window > 0 ? ceil_div(offset - rule.window + 1, s) : -kUnbounded;
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

/// count_tile_work for a rule with ranges: each query tile's key tiles between the first and
/// the last key its bands' entries reach (per piece of its rows in one segment), classified
/// one by one as the kernels do.
TileWork count_tile_work_with_ranges(const MaskRule& rule, const PositionMap& q, const PositionMap& k, int tile_q,
                                     int tile_k, bool count_visible, double& operations) {
  TileWork w;
  const std::int64_t Lq = q.length(), Lk = k.length();
  const std::int64_t nq = (Lq + tile_q - 1) / tile_q, nk = (Lk + tile_k - 1) / tile_k;
  const MaskRangeIndex& x = rule.ranges;
  auto key_tile_range = [&](std::int64_t kt, std::int64_t& lo, std::int64_t& hi) {
    k.range(kt * tile_k, std::min(Lk, (kt + 1) * tile_k), lo, hi);
  };
  const std::int64_t stride = (nq + kMaxQueryTiles - 1) / kMaxQueryTiles;
  std::int64_t first_key_tile = nk, end_key_tile = 0;
  std::vector<std::pair<std::int64_t, std::int64_t>> spans, runs;
  for (std::int64_t qt = 0; qt < nq; qt += stride) {
    const std::int64_t r0 = qt * tile_q, r1 = std::min(Lq, r0 + tile_q);
    const double rows = double(std::min(Lq, (qt + stride) * tile_q) - r0);
    const double weight = rows / double(r1 - r0);
    // Per piece of the tile (its rows in one segment), the key tiles between the first and the
    // last key its bands' entries reach; the union of those runs is what may be computed.
    Piece pieces[PositionMap::kMaxSegments];
    const int n_pieces = tile_pieces(q, r0, r1, pieces);
    // Bands and entries, and the maps' segments: what each classification of this tile visits.
    double visited = 1 + double(q.count + k.count);
    runs.clear();
    for (int i = 0; i < n_pieces; ++i) {
      std::int64_t reach_lo = kUnbounded, reach_hi = -kUnbounded;
      for (std::int64_t b = x.first_band_ending_after(pieces[i].lo);
           b < x.band_count && x.band_begin[b] <= pieces[i].hi; ++b) {
        visited += 1 + double(x.band_offset[b + 1] - x.band_offset[b]);
        for (std::int64_t e = x.band_offset[b]; e < x.band_offset[b + 1]; ++e) {
          reach_lo = std::min(reach_lo, x.entries[e].k_begin);
          reach_hi = std::max(reach_hi, x.entries[e].k_end - 1);
        }
      }
      if (reach_lo > reach_hi) continue;
      const std::int64_t a = first_true(0, nk, [&](std::int64_t kt) {
        std::int64_t lo, hi;
        key_tile_range(kt, lo, hi);
        return hi >= reach_lo;
      });
      const std::int64_t b = first_true(0, nk, [&](std::int64_t kt) {
        std::int64_t lo, hi;
        key_tile_range(kt, lo, hi);
        return lo > reach_hi;
      });
      if (a < b) runs.emplace_back(a, b);
    }
    operations += visited;
    std::sort(runs.begin(), runs.end());
    bool any = false;
    std::int64_t next = 0;  // the first key tile not yet classified
    for (const auto& [a, b] : runs) {
      operations += visited * double(std::max<std::int64_t>(0, b - std::max(a, next)));
      for (std::int64_t kt = std::max(a, next); kt < b; ++kt) {
        const std::int64_t c0 = kt * tile_k, c1 = std::min(Lk, c0 + tile_k);
        const TileVisibility v = classify_tile(rule, q, r0, r1, k, c0, c1);
        if (v == TileVisibility::hidden) continue;
        any = true;
        first_key_tile = std::min(first_key_tile, kt);
        end_key_tile = std::max(end_key_tile, kt + 1);
        const double cols = double(c1 - c0);
        if (v == TileVisibility::full) {
          w.full += rows * cols;
        } else {
          w.partial += rows * cols;
          if (count_visible)
            w.partial_visible += weight * visible_in_tile_with_ranges(rule, q, r0, r1, k, c0, c1, spans);
        }
      }
      next = std::max(next, b);
    }
    if (any) w.rows += rows;
  }
  if (first_key_tile < end_key_tile) w.keys = double(std::min(Lk, end_key_tile * tile_k) - first_key_tile * tile_k);
  return w;
}

/// count_tile_work, and with count_visible false without the partial tiles' visible scores;
/// adds the count's own cost to `operations` (computed_scores()).
TileWork count_tiles(const MaskRule& rule, const PositionMap& q, const PositionMap& k, int tile_q, int tile_k,
                     bool count_visible, double& operations) {
  require(tile_q > 0 && tile_k > 0, "tile sizes must be positive, got ", tile_q, " x ", tile_k);
  TileWork w;
  const std::int64_t Lq = q.length(), Lk = k.length();
  if (Lq == 0 || Lk == 0) return w;
  const std::int64_t nq = (Lq + tile_q - 1) / tile_q, nk = (Lk + tile_k - 1) / tile_k;
  // Key columns in tiles [a, b): whole tiles but the last, which may be short.
  auto columns = [&](std::int64_t a, std::int64_t b) -> double {
    if (a >= b) return 0.0;
    return double((b - a) * tile_k - (b == nk ? nk * tile_k - Lk : 0));
  };
  auto k_lo = [&](std::int64_t kt) {
    std::int64_t lo, hi;
    k.range(kt * tile_k, std::min(Lk, (kt + 1) * tile_k), lo, hi);
    return lo;
  };
  auto k_hi = [&](std::int64_t kt) {
    std::int64_t lo, hi;
    k.range(kt * tile_k, std::min(Lk, (kt + 1) * tile_k), lo, hi);
    return hi;
  };
  if (rule.ranges.on) return count_tile_work_with_ranges(rule, q, k, tile_q, tile_k, count_visible, operations);
  if (!rule.any()) {
    w.full = double(Lq) * double(Lk);
    w.rows = double(Lq);
    w.keys = double(Lk);
    return w;
  }
  const bool docs = rule.documents();
  const std::int64_t stride = (nq + kMaxQueryTiles - 1) / kMaxQueryTiles;
  std::int64_t first_key_tile = nk, end_key_tile = 0;  // the key tiles any query tile computes
  // The key tiles inside one segment of the keys, [t0, t1) per segment, along which positions
  // increase; and the tiles that straddle two segments, classified one by one.
  std::vector<std::pair<std::int64_t, std::int64_t>> inside;
  std::vector<std::int64_t> straddling;
  std::int64_t base = 0;
  for (int s = 0; s < k.count; ++s) {
    const std::int64_t end = base + k.seg[s].length;
    const std::int64_t t0 = (base + tile_k - 1) / tile_k, t1 = end == Lk ? nk : end / tile_k;
    if (t0 < t1) inside.emplace_back(t0, t1);
    if (end < Lk && end % tile_k != 0 && (straddling.empty() || straddling.back() != end / tile_k))
      straddling.push_back(end / tile_k);
    base = end;
  }
  // Each query tile: a few binary searches over each key segment's tiles, per query segment.
  double searches = double(straddling.size());
  for (const auto& [t0, t1] : inside) {
    searches += 1;
    for (std::int64_t n = t1 - t0; n > 0; n /= 2) searches += 6;
  }
  std::vector<std::pair<std::int64_t, std::int64_t>> visible, partial;
  for (std::int64_t qt = 0; qt < nq; qt += stride) {
    const std::int64_t r0 = qt * tile_q, r1 = std::min(Lq, r0 + tile_q);
    const double rows = double(std::min(Lq, (qt + stride) * tile_q) - r0);  // the rows this tile stands for
    const double weight = rows / double(r1 - r0);
    Piece pieces[PositionMap::kMaxSegments];
    const int n_pieces = tile_pieces(q, r0, r1, pieces);
    operations += searches * double(n_pieces);
    visible.clear();
    partial.clear();
    for (const auto& [t0, t1] : inside) {
      // A tile is computed when some piece of the query tile may see it, whole when every
      // piece sees all of it: the union of the pieces' visible tiles, the intersection of
      // their full ones.
      std::int64_t full_a = t0, full_b = t1;
      const std::size_t first_visible = visible.size();
      for (int i = 0; i < n_pieces; ++i) {
        const std::int64_t q_lo = pieces[i].lo, q_hi = pieces[i].hi;
        // Visible tiles [a, b): hidden ones are a prefix (too far back, or an earlier document)
        // and a suffix (after every query, or a later document).
        std::int64_t a = t0, b = t1;
        if (rule.causal) b = std::min(b, first_true(t0, t1, [&](std::int64_t kt) { return k_lo(kt) > q_hi; }));
        if (rule.window > 0)
          a = std::max(a, first_true(t0, t1, [&](std::int64_t kt) { return q_lo - k_hi(kt) < rule.window; }));
        std::int64_t dq_lo = 0, dq_hi = 0;
        if (docs) {
          dq_lo = rule.document_of(q_lo);
          dq_hi = rule.document_of(q_hi);
          a = std::max(a, first_true(t0, t1, [&](std::int64_t kt) { return rule.document_of(k_hi(kt)) >= dq_lo; }));
          b = std::min(b, first_true(t0, t1, [&](std::int64_t kt) { return rule.document_of(k_lo(kt)) > dq_hi; }));
        }
        if (a < b) visible.emplace_back(a, b);
        // Full tiles [fa, fb) inside them: every key at or before every query, within every
        // window, and all in the queries' one document.
        std::int64_t fa = a, fb = b;
        if (rule.causal) fb = std::min(fb, first_true(t0, t1, [&](std::int64_t kt) { return k_hi(kt) > q_lo; }));
        if (rule.window > 0)
          fa = std::max(fa, first_true(t0, t1, [&](std::int64_t kt) { return q_hi - k_lo(kt) < rule.window; }));
        if (docs) {
          if (dq_lo != dq_hi) {
            fb = fa;  // queries in two documents: no tile is full
          } else {
            fa = std::max(fa, first_true(t0, t1, [&](std::int64_t kt) { return rule.document_of(k_lo(kt)) >= dq_lo; }));
            fb = std::min(fb, first_true(t0, t1, [&](std::int64_t kt) { return rule.document_of(k_hi(kt)) > dq_lo; }));
          }
        }
        full_a = std::max(full_a, fa);
        full_b = std::min(full_b, fb);
      }
      if (full_a >= full_b) full_a = full_b = t1;
      // This segment's visible tiles as disjoint intervals, less the full ones: the partial.
      std::sort(visible.begin() + std::ptrdiff_t(first_visible), visible.end());
      std::size_t merged = first_visible;
      for (std::size_t i = first_visible; i < visible.size(); ++i) {
        if (merged > first_visible && visible[i].first <= visible[merged - 1].second)
          visible[merged - 1].second = std::max(visible[merged - 1].second, visible[i].second);
        else
          visible[merged++] = visible[i];
      }
      visible.resize(merged);
      for (std::size_t i = first_visible; i < merged; ++i) {
        const auto [a, b] = visible[i];
        if (std::min(b, full_a) > a) partial.emplace_back(a, std::min(b, full_a));
        if (b > std::max(a, full_b)) partial.emplace_back(std::max(a, full_b), b);
      }
      if (full_a < full_b) w.full += rows * columns(full_a, full_b);
    }
    for (const std::int64_t kt : straddling) {
      const TileVisibility v = classify_tile(rule, q, r0, r1, k, kt * tile_k, std::min(Lk, (kt + 1) * tile_k));
      if (v == TileVisibility::hidden) continue;
      visible.emplace_back(kt, kt + 1);
      if (v == TileVisibility::full)
        w.full += rows * columns(kt, kt + 1);
      else
        partial.emplace_back(kt, kt + 1);
    }
    if (visible.empty()) continue;
    w.rows += rows;
    for (const auto& [a, b] : visible) {
      first_key_tile = std::min(first_key_tile, a);
      end_key_tile = std::max(end_key_tile, b);
    }
    for (const auto& [a, b] : partial) w.partial += rows * columns(a, b);
    if (!count_visible) continue;
    // Of a run of partial tiles longer than kMaxPartialTiles, every step-th is counted for the
    // step tiles from it.
    constexpr std::int64_t kMaxPartialTiles = 256;
    for (const auto& [from, to] : partial) {
      const std::int64_t step = std::max<std::int64_t>(1, (to - from + kMaxPartialTiles - 1) / kMaxPartialTiles);
      for (std::int64_t kt = from; kt < to; kt += step)
        w.partial_visible += weight * double(std::min(step, to - kt)) *
                             visible_in_tile(rule, q, r0, r1, k, kt * tile_k, std::min(Lk, (kt + 1) * tile_k));
    }
  }
  w.keys = columns(first_key_tile, end_key_tile);
  return w;
}

}  // namespace

TileWork count_tile_work(const MaskRule& rule, const PositionMap& q, const PositionMap& k, int tile_q, int tile_k) {
  double operations = 0;
  return count_tiles(rule, q, k, tile_q, tile_k, true, operations);
}

double computed_scores(const MaskRule& rule, const PositionMap& q, const PositionMap& k, TileShape tile,
                       double* operations) {
  double own = 0;
  return count_tiles(rule, q, k, tile.q, tile.k, false, operations != nullptr ? *operations : own).computed();
}

}  // namespace kernels
}  // namespace rfa
