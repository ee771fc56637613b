// SPDX-License-Identifier: BSD-3-Clause
// Which part of a (query tile, key tile) block the mask lets through, decided from the
// position ranges alone so fully masked tiles are skipped and fully visible ones pay no
// per-element test. Documents are ranges of positions, so their test is a range test too.
#pragma once

#include <Kokkos_Core.hpp>
#include <cstdint>

#include "core/mask_ranges.hpp"
#include "core/positions.hpp"
#include "kernels/range_tile_spans.hpp"
#include "rfa/rfa.h"

namespace rfa {
namespace kernels {

enum class TileVisibility { hidden, partial, full };

/// The rule that decides which keys a query sees, on global positions: causal (k <= q) or
/// not, a sliding window (q - k < window; 0: none), packed documents (a key is visible only
/// in its query's document) and a mask given as ranges (a key is visible only where some entry
/// lets it through). A pair must pass every part. Without the causal mask a window still limits
/// only how far back a query looks: keys ahead of it stay visible.
struct MaskRule {
  bool causal = false;
  std::int64_t window = 0;
  /// Document d holds positions [doc_bounds[d], doc_bounds[d + 1]); doc_bound_count = documents
  /// + 1 (0: one document, the whole sequence). Host memory, increasing, from 0 to S.
  const std::int64_t* doc_bounds = nullptr;
  std::int64_t doc_bound_count = 0;
  /// The index of a mask given as ranges (core/mask_ranges.hpp); ranges.on is false otherwise.
  MaskRangeIndex ranges;

  KOKKOS_INLINE_FUNCTION bool documents() const { return doc_bound_count > 2; }
  KOKKOS_INLINE_FUNCTION bool any() const { return causal || window > 0 || documents() || ranges.on; }
  /// The causal mask and the window only (the per-tile loops test documents by their ids).
  KOKKOS_INLINE_FUNCTION bool visible(std::int64_t q_position, std::int64_t k_position) const {
    return (!causal || k_position <= q_position) && (window <= 0 || q_position - k_position < window);
  }
  /// The keys [lo, hi] of a sequence of `seq_total` that some query of [q_lo, q_hi] may see
  /// (lo > hi: none), bounded by each part of the rule: the causal mask, the window, the
  /// documents of the two ends, the ranges' bands (exact for one query without ranges). Host.
  void key_bounds(std::int64_t q_lo, std::int64_t q_hi, std::int64_t seq_total, std::int64_t& lo,
                  std::int64_t& hi) const {
    lo = 0;
    hi = seq_total - 1;
    if (causal && q_hi < hi) hi = q_hi;
    if (window > 0 && q_lo - window + 1 > lo) lo = q_lo - window + 1;
    if (documents()) {
      if (doc_bounds[document_of(q_lo)] > lo) lo = doc_bounds[document_of(q_lo)];
      if (doc_bounds[document_of(q_hi) + 1] - 1 < hi) hi = doc_bounds[document_of(q_hi) + 1] - 1;
    }
    if (ranges.on) {
      std::int64_t a = 0, b = 0;
      ranges.key_span(q_lo, q_hi, a, b);
      if (a > lo) lo = a;
      if (b < hi) hi = b;
    }
  }

  /// The document holding `position`: the last d with doc_bounds[d] <= position (empty
  /// documents, equal bounds, hold no position and are passed over). 0 without documents.
  KOKKOS_INLINE_FUNCTION std::int64_t document_of(std::int64_t position) const {
    if (!documents()) return 0;
    std::int64_t lo = 0, hi = doc_bound_count - 1;  // doc_bounds[lo] <= position < doc_bounds[hi]
    while (hi - lo > 1) {
      const std::int64_t mid = lo + (hi - lo) / 2;
      if (doc_bounds[mid] <= position)
        lo = mid;
      else
        hi = mid;
    }
    return lo;
  }
};

/// The documents of a tile's query and key positions, looked up once per tile rather than
/// once per score (host kernels; ROWS and COLS are the tile's largest extents).
template <int ROWS, int COLS>
struct DocumentIds {
  std::int64_t q[ROWS];
  std::int64_t k[COLS];
  DocumentIds(const MaskRule& rule, const std::int64_t* q_positions, int rows, const std::int64_t* k_positions,
              int cols) {
    for (int i = 0; i < rows; ++i) q[i] = rule.document_of(q_positions[i]);
    for (int j = 0; j < cols; ++j) k[j] = rule.document_of(k_positions[j]);
  }
};

/// Calls hide(i, j) for every query i < rows and key j < cols of a partial tile that the rule
/// (causal, window, documents, ranges) hides, query-major (host kernels). With ranges, `spans`
/// (the tile's RangeTileSpans over the same positions) saves a pass over each row's entries.
template <int ROWS, int COLS, class Hide>
void for_each_hidden(const MaskRule& rule, const std::int64_t* q_positions, int rows, const std::int64_t* k_positions,
                     int cols, Hide&& hide, const RangeTileSpans* spans = nullptr) {
  static_assert(ROWS <= RangeTileSpans::kMaxRows, "a tile's rows must fit RangeTileSpans");
  if (rule.ranges.on) {
    if (!spans) {
      const RangeTileSpans own(rule.ranges, q_positions, rows, k_positions, cols);
      for_each_hidden<ROWS, COLS>(rule, q_positions, rows, k_positions, cols, hide, &own);
      return;
    }
    if (!rule.causal && rule.window <= 0 && !rule.documents()) {  // the ranges alone: the gaps of each row
      for (int i = 0; i < rows; ++i) spans->for_each_hidden_column(i, [&](int j) { hide(i, j); });
    } else if (rule.documents()) {
      const DocumentIds<ROWS, COLS> docs(rule, q_positions, rows, k_positions, cols);
      for (int i = 0; i < rows; ++i)
        for (int j = 0; j < cols; ++j)
          if (!rule.visible(q_positions[i], k_positions[j]) || docs.q[i] != docs.k[j] || !spans->visible(i, j))
            hide(i, j);
    } else {
      for (int i = 0; i < rows; ++i)
        for (int j = 0; j < cols; ++j)
          if (!rule.visible(q_positions[i], k_positions[j]) || !spans->visible(i, j)) hide(i, j);
    }
    return;
  }
  if (rule.documents()) {
    const DocumentIds<ROWS, COLS> docs(rule, q_positions, rows, k_positions, cols);
    for (int i = 0; i < rows; ++i)
      for (int j = 0; j < cols; ++j)
        if (!rule.visible(q_positions[i], k_positions[j]) || docs.q[i] != docs.k[j]) hide(i, j);
  } else {
    for (int i = 0; i < rows; ++i)
      for (int j = 0; j < cols; ++j)
        if (!rule.visible(q_positions[i], k_positions[j])) hide(i, j);
  }
}

/// Which part of the pairs of queries at positions [q_lo, q_hi] and keys at [k_lo, k_hi]
/// (each the hull of rows of one increasing segment) the mask lets through, judged from the
/// ranges' ends.
KOKKOS_INLINE_FUNCTION TileVisibility classify_positions(const MaskRule& rule, std::int64_t q_lo, std::int64_t q_hi,
                                                         std::int64_t k_lo, std::int64_t k_hi) {
  if (rule.causal && k_lo > q_hi) return TileVisibility::hidden;                     // every key after every query
  if (rule.window > 0 && q_lo - k_hi >= rule.window) return TileVisibility::hidden;  // all too far back
  bool same_document = true;
  if (rule.documents()) {
    // Documents are ordered like positions: the ranges' first and last documents bound all.
    const std::int64_t dq_lo = rule.document_of(q_lo), dq_hi = rule.document_of(q_hi);
    const std::int64_t dk_lo = rule.document_of(k_lo), dk_hi = rule.document_of(k_hi);
    if (dk_hi < dq_lo || dq_hi < dk_lo) return TileVisibility::hidden;  // no document in common
    same_document = dq_lo == dq_hi && dk_lo == dk_hi && dq_lo == dk_lo;
  }
  bool ranges_full = true;
  if (rule.ranges.on) {
    bool any_visible = false;
    rule.ranges.classify(q_lo, q_hi, k_lo, k_hi, any_visible, ranges_full);
    if (!any_visible) return TileVisibility::hidden;  // no entry reaches the tile
  }
  const bool causal_full = !rule.causal || k_hi <= q_lo;                   // every key at or before every query
  const bool window_full = rule.window <= 0 || q_hi - k_lo < rule.window;  // every key within every window
  return causal_full && window_full && same_document && ranges_full ? TileVisibility::full : TileVisibility::partial;
}

/// The positions [lo, hi] of the local rows [r0, r1) that lie in segment `g`, whose first row
/// is local row `base`; false when none do.
KOKKOS_INLINE_FUNCTION bool segment_piece(const Segment& g, std::int64_t base, std::int64_t r0, std::int64_t r1,
                                          std::int64_t& lo, std::int64_t& hi) {
  const std::int64_t i0 = (r0 > base ? r0 : base) - base;
  const std::int64_t i1 = (r1 < base + g.length ? r1 : base + g.length) - base;
  if (i0 >= i1) return false;
  lo = g.start + i0 * g.stride;
  hi = g.start + (i1 - 1) * g.stride;
  return true;
}

/// The tile of local query rows [r0, r1) and key rows [c0, c1), segment by segment: where its
/// rows cross from one segment of a map to the next (a zigzag rank's two chunks, a balanced
/// rank's eight), each piece is judged on its own positions, so a tile whose rows lie in two
/// distant chunks is not judged on the span between them, which holds keys neither sees. Hidden
/// when every pair of pieces is, full when every pair is.
KOKKOS_INLINE_FUNCTION TileVisibility classify_tile(const MaskRule& rule, const PositionMap& q_pos, std::int64_t r0,
                                                    std::int64_t r1, const PositionMap& k_pos, std::int64_t c0,
                                                    std::int64_t c1) {
  if (!rule.any()) return TileVisibility::full;
  bool any_visible = false, all_full = true;
  std::int64_t q_base = 0;
  for (int a = 0; a < q_pos.count && q_base < r1; q_base += q_pos.seg[a++].length) {
    std::int64_t q_lo, q_hi;
    if (!segment_piece(q_pos.seg[a], q_base, r0, r1, q_lo, q_hi)) continue;
    std::int64_t k_base = 0;
    for (int b = 0; b < k_pos.count && k_base < c1; k_base += k_pos.seg[b++].length) {
      std::int64_t k_lo, k_hi;
      if (!segment_piece(k_pos.seg[b], k_base, c0, c1, k_lo, k_hi)) continue;
      const TileVisibility v = classify_positions(rule, q_lo, q_hi, k_lo, k_hi);
      any_visible = any_visible || v != TileVisibility::hidden;
      all_full = all_full && v == TileVisibility::full;
      if (any_visible && !all_full) return TileVisibility::partial;
    }
  }
  if (!any_visible) return TileVisibility::hidden;
  return all_full ? TileVisibility::full : TileVisibility::partial;
}

/// The register blocks of one (query tile, key tile) pair that the mask hides whole, so the
/// products can leave them out (micro_gemm.hpp's skip): only in a partial tile, and never a
/// block that reaches into the tile's padding. Blocks are in tile coordinates: queries
/// [q0, q1) from row r0, keys [k0, k1) from column c0; rows and cols are the real ones.
/// With ranges, `spans` (the tile's RangeTileSpans) answers for them; the rest of the rule is
/// classified from the positions.
struct HiddenBlocks {
  const MaskRule& rule;
  const PositionMap& q_pos;
  const PositionMap& k_pos;
  std::int64_t r0, c0;
  int rows, cols;
  bool partial;
  const RangeTileSpans* spans = nullptr;

  bool operator()(int q0, int q1, int k0, int k1) const {
    if (!partial || q1 > rows || k1 > cols) return false;
    if (!rule.ranges.on || !spans)
      return classify_tile(rule, q_pos, r0 + q0, r0 + q1, k_pos, c0 + k0, c0 + k1) == TileVisibility::hidden;
    if (!spans->any_visible(q0, q1, k0, k1)) return true;
    MaskRule rest = rule;  // the causal mask, the window and the documents
    rest.ranges.on = false;
    return classify_tile(rest, q_pos, r0 + q0, r0 + q1, k_pos, c0 + k0, c0 + k1) == TileVisibility::hidden;
  }
};

/// The same for whole blocks, segment by segment: a zigzag rank's rows are two distant
/// chunks, and the range spanning both would see keys neither chunk sees. The ring's schedule
/// skips a step whose block this calls hidden.
KOKKOS_INLINE_FUNCTION TileVisibility classify_blocks(const MaskRule& rule, const PositionMap& q_pos,
                                                      const PositionMap& k_pos) {
  return classify_tile(rule, q_pos, 0, q_pos.length(), k_pos, 0, k_pos.length());
}

}  // namespace kernels
}  // namespace rfa
