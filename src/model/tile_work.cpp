// SPDX-License-Identifier: BSD-3-Clause
#include "model/tile_work.hpp"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "core/error.hpp"

namespace rfa {
namespace model {
namespace {

/// The first i in [0, n) with pred(i) true, for pred false then true along i; n if none.
template <class Pred>
std::int64_t first_true(std::int64_t n, Pred&& pred) {
  std::int64_t lo = 0, hi = n;
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
void key_range(const kernels::MaskRule& rule, std::int64_t position, std::int64_t& a, std::int64_t& b) {
  a = rule.window > 0 ? position - rule.window + 1 : -kUnbounded;
  b = rule.causal ? position : kUnbounded;
}

/// Scores the rule lets through between query rows [i0, i1) of segment `qs` and key rows
/// [j0, j1) of segment `ks`, the queries all in positions [d0, d1) and the keys seen only
/// there. Segments of one stride count in closed form (band_count); others row by row.
std::int64_t visible_between(const kernels::MaskRule& rule, const Segment& qs, std::int64_t i0, std::int64_t i1,
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
double visible_in_tile(const kernels::MaskRule& rule, const PositionMap& q, std::int64_t r0, std::int64_t r1,
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
std::int64_t range_row_count(const kernels::MaskRule& rule, std::int64_t qp, const Segment& ks, std::int64_t j0,
                             std::int64_t j1, std::vector<std::pair<std::int64_t, std::int64_t>>& spans) {
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
double visible_in_tile_with_ranges(const kernels::MaskRule& rule, const PositionMap& q, std::int64_t r0,
                                   std::int64_t r1, const PositionMap& k, std::int64_t c0, std::int64_t c1,
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
/// the last key its bands' entries reach, classified one by one as the kernels do.
TileWork count_tile_work_with_ranges(const kernels::MaskRule& rule, const PositionMap& q, const PositionMap& k,
                                     int tile_q, int tile_k) {
  TileWork w;
  const std::int64_t Lq = q.length(), Lk = k.length();
  const std::int64_t nq = (Lq + tile_q - 1) / tile_q, nk = (Lk + tile_k - 1) / tile_k;
  const MaskRangeIndex& x = rule.ranges;
  auto key_tile_range = [&](std::int64_t kt, std::int64_t& lo, std::int64_t& hi) {
    k.range(kt * tile_k, std::min(Lk, (kt + 1) * tile_k), lo, hi);
  };
  const std::int64_t stride = (nq + kMaxQueryTiles - 1) / kMaxQueryTiles;
  std::int64_t first_key_tile = nk, end_key_tile = 0;
  std::vector<std::pair<std::int64_t, std::int64_t>> spans;
  for (std::int64_t qt = 0; qt < nq; qt += stride) {
    const std::int64_t r0 = qt * tile_q, r1 = std::min(Lq, r0 + tile_q);
    const double rows = double(std::min(Lq, (qt + stride) * tile_q) - r0);
    const double weight = rows / double(r1 - r0);
    std::int64_t q_lo, q_hi;
    q.range(r0, r1, q_lo, q_hi);
    std::int64_t reach_lo = kUnbounded, reach_hi = -kUnbounded;  // the keys the bands' entries reach
    for (std::int64_t b = x.first_band_ending_after(q_lo); b < x.band_count && x.band_begin[b] <= q_hi; ++b)
      for (std::int64_t e = x.band_offset[b]; e < x.band_offset[b + 1]; ++e) {
        reach_lo = std::min(reach_lo, x.entries[e].k_begin);
        reach_hi = std::max(reach_hi, x.entries[e].k_end - 1);
      }
    if (reach_lo > reach_hi) continue;
    const std::int64_t a = first_true(nk, [&](std::int64_t kt) {
      std::int64_t lo, hi;
      key_tile_range(kt, lo, hi);
      return hi >= reach_lo;
    });
    const std::int64_t b = first_true(nk, [&](std::int64_t kt) {
      std::int64_t lo, hi;
      key_tile_range(kt, lo, hi);
      return lo > reach_hi;
    });
    bool any = false;
    for (std::int64_t kt = a; kt < b; ++kt) {
      const std::int64_t c0 = kt * tile_k, c1 = std::min(Lk, c0 + tile_k);
      const kernels::TileVisibility v = kernels::classify_tile(rule, q, r0, r1, k, c0, c1);
      if (v == kernels::TileVisibility::hidden) continue;
      any = true;
      first_key_tile = std::min(first_key_tile, kt);
      end_key_tile = std::max(end_key_tile, kt + 1);
      const double cols = double(c1 - c0);
      if (v == kernels::TileVisibility::full) {
        w.full += rows * cols;
      } else {
        w.partial += rows * cols;
        w.partial_visible += weight * visible_in_tile_with_ranges(rule, q, r0, r1, k, c0, c1, spans);
      }
    }
    if (any) w.rows += rows;
  }
  if (first_key_tile < end_key_tile) w.keys = double(std::min(Lk, end_key_tile * tile_k) - first_key_tile * tile_k);
  return w;
}

}  // namespace

TileWork count_tile_work(const kernels::MaskRule& rule, const PositionMap& q, const PositionMap& k, int tile_q,
                         int tile_k) {
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
  if (rule.ranges.on) return count_tile_work_with_ranges(rule, q, k, tile_q, tile_k);
  if (!rule.any()) {
    w.full = double(Lq) * double(Lk);
    w.rows = double(Lq);
    w.keys = double(Lk);
    return w;
  }
  const bool docs = rule.documents();
  const std::int64_t stride = (nq + kMaxQueryTiles - 1) / kMaxQueryTiles;
  std::int64_t first_key_tile = nk, end_key_tile = 0;  // the key tiles any query tile computes
  for (std::int64_t qt = 0; qt < nq; qt += stride) {
    const std::int64_t r0 = qt * tile_q, r1 = std::min(Lq, r0 + tile_q);
    const double rows = double(std::min(Lq, (qt + stride) * tile_q) - r0);  // the rows this tile stands for
    const double weight = rows / double(r1 - r0);
    std::int64_t q_lo, q_hi;
    q.range(r0, r1, q_lo, q_hi);
    // Visible tiles [a, b): hidden ones are a prefix (too far back, or an earlier document) and
    // a suffix (after every query, or a later document).
    std::int64_t a = 0, b = nk;
    if (rule.causal) b = std::min(b, first_true(nk, [&](std::int64_t kt) { return k_lo(kt) > q_hi; }));
    if (rule.window > 0)
      a = std::max(a, first_true(nk, [&](std::int64_t kt) { return q_lo - k_hi(kt) < rule.window; }));
    std::int64_t dq_lo = 0, dq_hi = 0;
    if (docs) {
      dq_lo = rule.document_of(q_lo);
      dq_hi = rule.document_of(q_hi);
      a = std::max(a, first_true(nk, [&](std::int64_t kt) { return rule.document_of(k_hi(kt)) >= dq_lo; }));
      b = std::min(b, first_true(nk, [&](std::int64_t kt) { return rule.document_of(k_lo(kt)) > dq_hi; }));
    }
    if (a >= b) continue;
    w.rows += rows;
    first_key_tile = std::min(first_key_tile, a);
    end_key_tile = std::max(end_key_tile, b);
    // Full tiles [fa, fb) inside them: every key at or before every query, within every
    // window, and all in the queries' one document.
    std::int64_t fa = a, fb = b;
    if (rule.causal) fb = std::min(fb, first_true(nk, [&](std::int64_t kt) { return k_hi(kt) > q_lo; }));
    if (rule.window > 0)
      fa = std::max(fa, first_true(nk, [&](std::int64_t kt) { return q_hi - k_lo(kt) < rule.window; }));
    if (docs) {
      if (dq_lo != dq_hi) {
        fb = fa;  // queries in two documents: no tile is full
      } else {
        fa = std::max(fa, first_true(nk, [&](std::int64_t kt) { return rule.document_of(k_lo(kt)) >= dq_lo; }));
        fb = std::min(fb, first_true(nk, [&](std::int64_t kt) { return rule.document_of(k_hi(kt)) > dq_lo; }));
      }
    }
    const double all = columns(a, b), full = fa < fb ? columns(fa, fb) : 0.0;
    w.full += rows * full;
    w.partial += rows * (all - full);
    // The partial tiles are [a, fa) and [fb, b) (all of [a, b) when none is full); of a run
    // longer than kMaxPartialTiles, every step-th is counted for the step tiles from it.
    if (fa >= fb) fa = fb = b;
    constexpr std::int64_t kMaxPartialTiles = 256;
    for (const auto& [from, to] : {std::pair<std::int64_t, std::int64_t>{a, fa}, {fb, b}}) {
      const std::int64_t step = std::max<std::int64_t>(1, (to - from + kMaxPartialTiles - 1) / kMaxPartialTiles);
      for (std::int64_t kt = from; kt < to; kt += step)
        w.partial_visible += weight * double(std::min(step, to - kt)) *
                             visible_in_tile(rule, q, r0, r1, k, kt * tile_k, std::min(Lk, (kt + 1) * tile_k));
    }
  }
  w.keys = columns(first_key_tile, end_key_tile);
  return w;
}

TileWork TileWorkMemo::count(const kernels::MaskRule& rule, const PositionMap& q, const PositionMap& k, int tile_q,
                             int tile_k) {
  ++asked_;
  if (rule.documents() || rule.ranges.on) return count_tile_work(rule, q, k, tile_q, tile_k);
  std::int64_t origin = q.count > 0 ? q.seg[0].start : 0;
  for (const PositionMap* m : {&q, &k})
    for (int s = 0; s < m->count; ++s) origin = std::min(origin, m->seg[s].start);
  std::vector<std::int64_t> key = {rule.causal ? 1 : 0, rule.window, tile_q, tile_k};
  for (const PositionMap* m : {&q, &k}) {
    key.push_back(m->count);
    for (int s = 0; s < m->count; ++s)
      key.insert(key.end(), {m->seg[s].start - origin, m->seg[s].stride, m->seg[s].length});
  }
  const auto found = known_.find(key);
  if (found != known_.end()) {
    ++remembered_;
    return found->second;
  }
  const TileWork w = count_tile_work(rule, q, k, tile_q, tile_k);
  known_.emplace(std::move(key), w);
  return w;
}

}  // namespace model
}  // namespace rfa
