// SPDX-License-Identifier: BSD-3-Clause
#include "model/tile_work.hpp"

#include <algorithm>
#include <cstdint>

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

/// Keys among local rows [c0, c1) of `k` whose positions lie in [a, b].
std::int64_t keys_between(const PositionMap& k, std::int64_t c0, std::int64_t c1, std::int64_t a, std::int64_t b) {
  std::int64_t n = 0, base = 0;
  for (int s = 0; s < k.count; ++s) {
    const Segment& seg = k.seg[s];
    const std::int64_t j0 = std::max(c0, base) - base, j1 = std::min(c1, base + seg.length) - base;
    base += seg.length;
    if (j0 >= j1 || a > b) continue;
    // start + j * stride in [a, b]  <=>  j in [ceil((a - start) / stride), floor((b - start) / stride)]
    auto floor_div = [](std::int64_t x, std::int64_t y) { return x >= 0 ? x / y : -((-x + y - 1) / y); };
    const std::int64_t lo = std::max(j0, -floor_div(-(a - seg.start), seg.stride));
    const std::int64_t hi = std::min(j1 - 1, floor_div(b - seg.start, seg.stride));
    if (lo <= hi) n += hi - lo + 1;
  }
  return n;
}

/// Scores the rule lets through in the tile of query rows [r0, r1) and key rows [c0, c1).
double visible_in_tile(const kernels::MaskRule& rule, const PositionMap& q, std::int64_t r0, std::int64_t r1,
                       const PositionMap& k, std::int64_t c0, std::int64_t c1) {
  double n = 0;
  for (std::int64_t i = r0; i < r1; ++i) {
    const std::int64_t p = q(i);
    std::int64_t a = rule.window > 0 ? p - rule.window + 1 : INT64_MIN / 2;
    std::int64_t b = rule.causal ? p : INT64_MAX / 2;
    if (rule.documents()) {
      const std::int64_t d = rule.document_of(p);
      a = std::max(a, rule.doc_bounds[d]);
      b = std::min(b, rule.doc_bounds[d + 1] - 1);
    }
    n += double(keys_between(k, c0, c1, a, b));
  }
  return n;
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
  if (!rule.any()) {
    w.full = double(Lq) * double(Lk);
    w.rows = double(Lq);
    w.keys = double(Lk);
    return w;
  }
  const bool docs = rule.documents();
  // Beyond kMaxQueryTiles query tiles, every stride-th is counted and stands for the stride
  // tiles from it, so that a block of any length costs a bounded time (the rows of each are
  // counted as they are).
  constexpr std::int64_t kMaxQueryTiles = 4096;
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

}  // namespace model
}  // namespace rfa
