// SPDX-License-Identifier: BSD-3-Clause
#include "kernels/key_tile_scan.hpp"

#include <algorithm>

#include "core/mask_ranges.hpp"

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

/// Stands for "no bound" in position arithmetic: far beyond any position, far from overflow.
constexpr std::int64_t kUnbounded = std::int64_t(1) << 60;

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

/// Appends tile kt to `v`, extending the last interval when kt follows it.
void append_tile(std::vector<TileInterval>& v, std::int64_t kt) {
  if (!v.empty() && v.back().second == kt)
    v.back().second = kt + 1;
  else
    v.emplace_back(kt, kt + 1);
}

}  // namespace

std::vector<TileInterval>& merge_intervals(std::vector<TileInterval>& v, std::size_t from) {
  std::sort(v.begin() + std::ptrdiff_t(from), v.end());
  std::size_t merged = from;
  for (std::size_t i = from; i < v.size(); ++i) {
    if (merged > from && v[i].first <= v[merged - 1].second)
      v[merged - 1].second = std::max(v[merged - 1].second, v[i].second);
    else
      v[merged++] = v[i];
  }
  v.resize(merged);
  return v;
}

KeyTileScan::KeyTileScan(const MaskRule& rule, const PositionMap& q, const PositionMap& k, int tile_k)
    : rule_(rule), q_(q), k_(k), tile_k_(tile_k), Lk_(k.length()) {
  nk_ = (Lk_ + tile_k_ - 1) / tile_k_;
  std::int64_t base = 0;
  for (int s = 0; s < k.count; ++s) {
    const std::int64_t end = base + k.seg[s].length;
    const std::int64_t t0 = (base + tile_k_ - 1) / tile_k_, t1 = end == Lk_ ? nk_ : end / tile_k_;
    if (t0 < t1) inside_.emplace_back(t0, t1);
    if (end < Lk_ && end % tile_k_ != 0 && (straddling_.empty() || straddling_.back() != end / tile_k_))
      straddling_.push_back(end / tile_k_);
    base = end;
  }
  searches_ = double(straddling_.size());
  for (const auto& [t0, t1] : inside_) {
    searches_ += 1;
    for (std::int64_t n = t1 - t0; n > 0; n /= 2) searches_ += 6;
  }
}

double KeyTileScan::columns(std::int64_t a, std::int64_t b) const {
  if (a >= b) return 0.0;
  return double((b - a) * tile_k_ - (b == nk_ ? nk_ * tile_k_ - Lk_ : 0));
}

double KeyTileScan::columns(const std::vector<TileInterval>& tiles) const {
  double n = 0;
  for (const auto& [a, b] : tiles) n += columns(a, b);
  return n;
}

std::int64_t KeyTileScan::key_lo(std::int64_t kt) const {
  std::int64_t lo, hi;
  k_.range(kt * tile_k_, std::min(Lk_, (kt + 1) * tile_k_), lo, hi);
  return lo;
}

std::int64_t KeyTileScan::key_hi(std::int64_t kt) const {
  std::int64_t lo, hi;
  k_.range(kt * tile_k_, std::min(Lk_, (kt + 1) * tile_k_), lo, hi);
  return hi;
}

void KeyTileScan::scan(std::int64_t r0, std::int64_t r1, double& operations) {
  visible_.clear();
  full_.clear();
  partial_.clear();
  if (r0 >= r1 || nk_ == 0) return;
  if (!rule_.any()) {
    visible_.emplace_back(0, nk_);
    full_.emplace_back(0, nk_);
    return;
  }
  if (rule_.ranges.on)
    scan_ranges(r0, r1, operations);
  else
    scan_rule(r0, r1, operations);
}

void KeyTileScan::scan_rule(std::int64_t r0, std::int64_t r1, double& operations) {
  const MaskRule& rule = rule_;
  const bool docs = rule.documents();
  Piece pieces[PositionMap::kMaxSegments];
  const int n_pieces = tile_pieces(q_, r0, r1, pieces);
  operations += searches_ * double(n_pieces);
  for (const auto& [t0, t1] : inside_) {
    // A tile is computed when some piece of the query rows may see it, whole when every piece
    // sees all of it: the union of the pieces' visible tiles, the intersection of their full ones.
    std::int64_t full_a = t0, full_b = t1;
    const std::size_t first_visible = visible_.size();
    for (int i = 0; i < n_pieces; ++i) {
      const std::int64_t q_lo = pieces[i].lo, q_hi = pieces[i].hi;
      // Visible tiles [a, b): hidden ones are a prefix (too far back, or an earlier document)
      // and a suffix (after every query, or a later document).
      std::int64_t a = t0, b = t1;
      if (rule.causal) b = std::min(b, first_true(t0, t1, [&](std::int64_t kt) { return key_lo(kt) > q_hi; }));
      if (rule.window > 0)
        a = std::max(a, first_true(t0, t1, [&](std::int64_t kt) { return q_lo - key_hi(kt) < rule.window; }));
      std::int64_t dq_lo = 0, dq_hi = 0;
      if (docs) {
        dq_lo = rule.document_of(q_lo);
        dq_hi = rule.document_of(q_hi);
        a = std::max(a, first_true(t0, t1, [&](std::int64_t kt) { return rule.document_of(key_hi(kt)) >= dq_lo; }));
        b = std::min(b, first_true(t0, t1, [&](std::int64_t kt) { return rule.document_of(key_lo(kt)) > dq_hi; }));
      }
      if (a < b) visible_.emplace_back(a, b);
      // Full tiles [fa, fb) inside them: every key at or before every query, within every
      // window, and all in the queries' one document.
      std::int64_t fa = a, fb = b;
      if (rule.causal) fb = std::min(fb, first_true(t0, t1, [&](std::int64_t kt) { return key_hi(kt) > q_lo; }));
      if (rule.window > 0)
        fa = std::max(fa, first_true(t0, t1, [&](std::int64_t kt) { return q_hi - key_lo(kt) < rule.window; }));
      if (docs) {
        if (dq_lo != dq_hi) {
          fb = fa;  // queries in two documents: no tile is full
        } else {
          fa = std::max(fa, first_true(t0, t1, [&](std::int64_t kt) { return rule.document_of(key_lo(kt)) >= dq_lo; }));
          fb = std::min(fb, first_true(t0, t1, [&](std::int64_t kt) { return rule.document_of(key_hi(kt)) > dq_lo; }));
        }
      }
      full_a = std::max(full_a, fa);
      full_b = std::min(full_b, fb);
    }
    if (full_a >= full_b) full_a = full_b = t1;
    // This segment's visible tiles as disjoint intervals, less the full ones: the partial.
    merge_intervals(visible_, first_visible);
    for (std::size_t i = first_visible; i < visible_.size(); ++i) {
      const auto [a, b] = visible_[i];
      if (std::min(b, full_a) > a) partial_.emplace_back(a, std::min(b, full_a));
      if (b > std::max(a, full_b)) partial_.emplace_back(std::max(a, full_b), b);
    }
    if (full_a < full_b) full_.emplace_back(full_a, full_b);
  }
  for (const std::int64_t kt : straddling_) {
    const TileVisibility v = classify_tile(rule, q_, r0, r1, k_, kt * tile_k_, std::min(Lk_, (kt + 1) * tile_k_));
    if (v == TileVisibility::hidden) continue;
    visible_.emplace_back(kt, kt + 1);
    (v == TileVisibility::full ? full_ : partial_).emplace_back(kt, kt + 1);
  }
}

void KeyTileScan::scan_ranges(std::int64_t r0, std::int64_t r1, double& operations) {
  const MaskRangeIndex& x = rule_.ranges;
  // Per piece of the rows (its rows in one segment), the key tiles between the first and the
  // last key its bands' entries reach; the union of those runs is what may be computed.
  Piece pieces[PositionMap::kMaxSegments];
  const int n_pieces = tile_pieces(q_, r0, r1, pieces);
  // Bands and entries, and the maps' segments: what each classification of these rows visits.
  double visited = 1 + double(q_.count + k_.count);
  runs_.clear();
  for (int i = 0; i < n_pieces; ++i) {
    std::int64_t reach_lo = kUnbounded, reach_hi = -kUnbounded;
    for (std::int64_t b = x.first_band_ending_after(pieces[i].lo); b < x.band_count && x.band_begin[b] <= pieces[i].hi;
         ++b) {
      visited += 1 + double(x.band_offset[b + 1] - x.band_offset[b]);
      for (std::int64_t e = x.band_offset[b]; e < x.band_offset[b + 1]; ++e) {
        reach_lo = std::min(reach_lo, x.entries[e].k_begin);
        reach_hi = std::max(reach_hi, x.entries[e].k_end - 1);
      }
    }
    if (reach_lo > reach_hi) continue;
    const std::int64_t a = first_true(0, nk_, [&](std::int64_t kt) { return key_hi(kt) >= reach_lo; });
    const std::int64_t b = first_true(0, nk_, [&](std::int64_t kt) { return key_lo(kt) > reach_hi; });
    if (a < b) runs_.emplace_back(a, b);
  }
  operations += visited;
  merge_intervals(runs_);
  for (const auto& [a, b] : runs_) {
    operations += visited * double(b - a);
    for (std::int64_t kt = a; kt < b; ++kt) {
      const TileVisibility v = classify_tile(rule_, q_, r0, r1, k_, kt * tile_k_, std::min(Lk_, (kt + 1) * tile_k_));
      if (v == TileVisibility::hidden) continue;
      append_tile(visible_, kt);
      append_tile(v == TileVisibility::full ? full_ : partial_, kt);
    }
  }
}

}  // namespace kernels
}  // namespace rfa
