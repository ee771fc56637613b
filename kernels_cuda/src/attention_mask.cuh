// SPDX-License-Identifier: BSD-3-Clause
// Global token positions and the mask as the kernels see them: a position map flattened to
// two affine pieces, the causal mask, window and documents, the classification of a (query
// tile, key tile) pair as skipped, partially masked or fully visible, and the mask inside a
// partial tile.
#pragma once

#include <cmath>
#include <cstdint>

// Keeps the next loop rolled, or unrolls it, in device code; a function kept out of line on the
// device (RFA_CUDA_OUT_OF_LINE) has registers of its own, so that a kernel's registers are sized
// by its hot loop, not by code the loop calls rarely. Host compilers (the mask's host test) do
// without.
#ifdef __CUDACC__
#define RFA_CUDA_ROLLED_LOOP _Pragma("unroll 1")
#define RFA_CUDA_UNROLLED_LOOP _Pragma("unroll")
#define RFA_CUDA_OUT_OF_LINE __noinline__
#else
#define RFA_CUDA_ROLLED_LOOP
#define RFA_CUDA_UNROLLED_LOOP
#define RFA_CUDA_OUT_OF_LINE
#endif

namespace rfa_cuda {
namespace detail {

// Local row i maps to start0 + i*stride0 while i < length0, then to
// start1 + (i - length0)*stride1. The identity map is (0, 1, INT64_MAX).
struct DevicePositions {
  std::int64_t start0, stride0, length0, start1, stride1;

  // Every row on one piece (the identity map: one(0, 1)).
  __host__ __device__ static DevicePositions one(std::int64_t start, std::int64_t stride) {
    return DevicePositions{start, stride, INT64_MAX, start, stride};
  }
  // The first `length0` rows on the first piece, the rest on the second.
  __host__ __device__ static DevicePositions two(std::int64_t start0, std::int64_t stride0, std::int64_t length0,
                                                 std::int64_t start1, std::int64_t stride1) {
    return DevicePositions{start0, stride0, length0, start1, stride1};
  }

  __host__ __device__ std::int64_t at(std::int64_t i) const {
    return i < length0 ? start0 + i * stride0 : start1 + (i - length0) * stride1;
  }
};

// The mask on global positions: causal (k <= q), a sliding window (q - k < window; 0: none),
// a mask given as ranges (DeviceRanges) and packed documents (a key is visible only in its query's document; doc_bounds
// holds doc_bound_count cumulative boundaries in device memory, 0: one document). The same rule as the host kernels'
// MaskRule (src/kernels/tile_visibility.hpp). A mask given as ranges, indexed by query bands
// (rfa_cuda_attention_shape's range_* fields; the host kernels' MaskRangeIndex, src/core/mask_ranges.hpp): entry e of a
// band holds entries[6 e ..]: q_begin, q_end, k_begin, k_end, diag_lo, diag_hi.
struct DeviceRanges {
  bool on;
  const std::int64_t* band_begin;
  const std::int64_t* band_end;
  const std::int64_t* band_offset;
  const std::int64_t* entries;
  std::int64_t band_count;

  // The first band that ends after `position` (band_count if none).
  __device__ std::int64_t first_band_ending_after(std::int64_t position) const {
    std::int64_t lo = 0, hi = band_count;
    while (lo < hi) {
      const std::int64_t mid = lo + (hi - lo) / 2;
      if (__ldg(band_end + mid) > position)
        hi = mid;
      else
        lo = mid + 1;
    }
    return lo;
  }
  __device__ bool visible(std::int64_t q, std::int64_t k) const {
    const std::int64_t b = first_band_ending_after(q);
    if (b >= band_count || __ldg(band_begin + b) > q) return false;
    for (std::int64_t e = __ldg(band_offset + b); e < __ldg(band_offset + b + 1); ++e) {
      const std::int64_t* r = entries + 6 * e;
      if (k >= __ldg(r + 2) && k < __ldg(r + 3) && k - q >= __ldg(r + 4) && k - q <= __ldg(r + 5)) return true;
    }
    return false;
  }
  // Queries [q_lo, q_hi] x keys [k_lo, k_hi]: `any` if some pair may be visible, `all` if an entry
  // of each band covers every pair (false where unsure).
  __device__ void classify(std::int64_t q_lo, std::int64_t q_hi, std::int64_t k_lo, std::int64_t k_hi, bool& any,
                           bool& all) const {
    any = false;
    all = true;
    std::int64_t next = q_lo;
    for (std::int64_t b = first_band_ending_after(q_lo); b < band_count && __ldg(band_begin + b) <= q_hi; ++b) {
      const std::int64_t begin = __ldg(band_begin + b), end = __ldg(band_end + b);
      const std::int64_t qa = begin > q_lo ? begin : q_lo, qb = end - 1 < q_hi ? end - 1 : q_hi;
      if (qa > next) all = false;
      next = qb + 1;
      bool covered = false;
      for (std::int64_t e = __ldg(band_offset + b); e < __ldg(band_offset + b + 1); ++e) {
        const std::int64_t* r = entries + 6 * e;
        const std::int64_t kb = __ldg(r + 2), ke = __ldg(r + 3), dlo = __ldg(r + 4), dhi = __ldg(r + 5);
        const std::int64_t ka = k_lo > kb ? k_lo : kb, kz = k_hi < ke - 1 ? k_hi : ke - 1;
        if (ka > kz || kz - qa < dlo || ka - qb > dhi) continue;
        any = true;
        covered = covered || (kb <= k_lo && k_hi < ke && k_lo - qb >= dlo && k_hi - qa <= dhi);
      }
      all = all && covered;
    }
    if (next <= q_hi) all = false;
  }
  // The keys [lo, hi] (lo > hi: none) that queries at positions [q_lo, q_hi] may see: each entry
  // of a band holding some of them gives its keys [k_begin, k_end) cut by its diagonal band
  // (k - q in [diag_lo, diag_hi]) to those that one of the band's queries in [q_lo, q_hi]
  // reaches. The unbounded offsets (2^62) leave room for the sums.
  __device__ void key_span(std::int64_t q_lo, std::int64_t q_hi, std::int64_t& lo, std::int64_t& hi) const {
    lo = INT64_MAX;
    hi = INT64_MIN;
    for (std::int64_t b = first_band_ending_after(q_lo); b < band_count && __ldg(band_begin + b) <= q_hi; ++b) {
      const std::int64_t begin = __ldg(band_begin + b), end = __ldg(band_end + b);
      const std::int64_t qa = begin > q_lo ? begin : q_lo, qb = end - 1 < q_hi ? end - 1 : q_hi;
      for (std::int64_t e = __ldg(band_offset + b); e < __ldg(band_offset + b + 1); ++e) {
        const std::int64_t* r = entries + 6 * e;
        const std::int64_t reach_lo = qa + __ldg(r + 4), reach_hi = qb + __ldg(r + 5);
        const std::int64_t kb = __ldg(r + 2), ke = __ldg(r + 3);
        const std::int64_t a = kb > reach_lo ? kb : reach_lo, z = ke - 1 < reach_hi ? ke - 1 : reach_hi;
        if (a > z) continue;
        lo = a < lo ? a : lo;
        hi = z > hi ? z : hi;
      }
    }
  }
  // The queries [lo, hi] (lo > hi: none) that may see keys at positions [k_lo, k_hi]: each entry
  // that reaches some of the keys gives the queries of its band whose diagonal band meets them.
  // The index is by query, so every band is read: false (nothing found) where the list holds more
  // than kQuerySpanEntries entries, which would cost each tile of keys more than the query tiles
  // it could leave out.
  static constexpr std::int64_t kQuerySpanEntries = 256;
  // An index without bands (no query sees any key) has no arrays: nothing is read.
  __device__ bool query_span(std::int64_t k_lo, std::int64_t k_hi, std::int64_t& lo, std::int64_t& hi) const {
    if (band_count > 0 && __ldg(band_offset + band_count) > kQuerySpanEntries) return false;
    lo = INT64_MAX;
    hi = INT64_MIN;
    for (std::int64_t b = 0; b < band_count; ++b) {
      const std::int64_t begin = __ldg(band_begin + b), end = __ldg(band_end + b);
      for (std::int64_t e = __ldg(band_offset + b); e < __ldg(band_offset + b + 1); ++e) {
        const std::int64_t* r = entries + 6 * e;
        const std::int64_t kb = __ldg(r + 2), ke = __ldg(r + 3);
        const std::int64_t ka = kb > k_lo ? kb : k_lo, kz = ke - 1 < k_hi ? ke - 1 : k_hi;
        if (ka > kz) continue;
        const std::int64_t reach_lo = ka - __ldg(r + 5), reach_hi = kz - __ldg(r + 4);
        const std::int64_t a = begin > reach_lo ? begin : reach_lo, z = end - 1 < reach_hi ? end - 1 : reach_hi;
        if (a > z) continue;
        lo = a < lo ? a : lo;
        hi = z > hi ? z : hi;
      }
    }
    return true;
  }
};

struct DeviceMask {
  bool causal;
  std::int64_t window;
  const std::int64_t* doc_bounds;
  std::int64_t doc_bound_count;
  DeviceRanges ranges;
  // Per-sequence documents: batch + 1 offsets into doc_bounds (nullptr: one list for every
  // entry). The kernels test the mask of their batch entry, for_entry(b).
  const std::int64_t* doc_offsets;

  __host__ __device__ bool documents() const { return doc_bound_count > 2; }
  // The mask of batch entry b: with per-sequence documents, its own boundaries.
  __device__ DeviceMask for_entry(int b) const {
    DeviceMask m = *this;
    if (doc_offsets != nullptr) {
      const std::int64_t first = __ldg(doc_offsets + b);
      m.doc_bounds = doc_bounds + first;
      m.doc_bound_count = __ldg(doc_offsets + b + 1) - first;
      m.doc_offsets = nullptr;
    }
    return m;
  }
  __host__ __device__ bool any() const { return causal || window > 0 || documents() || ranges.on; }
  // The last d with doc_bounds[d] <= position; a binary search in global memory, done only at
  // tile corners and in partial tiles (read through the read-only cache).
  __device__ std::int64_t document_of(std::int64_t position) const {
    std::int64_t lo = 0, hi = doc_bound_count - 1;
    while (hi - lo > 1) {
      const std::int64_t mid = lo + (hi - lo) / 2;
      if (__ldg(doc_bounds + mid) <= position)
        lo = mid;
      else
        hi = mid;
    }
    return lo;
  }
  // The positions [lo, hi] of the documents that positions [p_lo, p_hi] lie in: as document_of
  // counts them, the first document takes every position before the boundaries and the last
  // every one after them (INT64_MIN, INT64_MAX there).
  __device__ void document_span(std::int64_t p_lo, std::int64_t p_hi, std::int64_t& lo, std::int64_t& hi) const {
    const std::int64_t first = document_of(p_lo), last = document_of(p_hi);
    lo = first == 0 ? INT64_MIN : __ldg(doc_bounds + first);
    hi = last + 2 >= doc_bound_count ? INT64_MAX : __ldg(doc_bounds + last + 1) - 1;
  }
  // The causal and window parts of the rule (visible_pair below adds the documents and ranges).
  __host__ __device__ bool in_causal_window(std::int64_t q, std::int64_t k) const {
    return (!causal || k <= q) && (window <= 0 || q - k < window);
  }
};

enum class TileKind { kSkip, kPartial, kFull };

// Queries at positions [q_lo, q_hi] against keys at [k_lo, k_hi], each the positions of rows
// of one segment (so every position between the ends may be one of them).
__device__ __forceinline__ TileKind classify_positions(const DeviceMask& mask, std::int64_t q_lo, std::int64_t q_hi,
                                                       std::int64_t k_lo, std::int64_t k_hi) {
  if (mask.causal && k_lo > q_hi) return TileKind::kSkip;                     // every key after every query
  if (mask.window > 0 && q_lo - k_hi >= mask.window) return TileKind::kSkip;  // all too far back
  bool one_document = true;
  if (mask.documents()) {
    const std::int64_t dq_lo = mask.document_of(q_lo), dq_hi = mask.document_of(q_hi);
    const std::int64_t dk_lo = mask.document_of(k_lo), dk_hi = mask.document_of(k_hi);
    if (dk_hi < dq_lo || dq_hi < dk_lo) return TileKind::kSkip;  // no document in common
    one_document = dq_lo == dq_hi && dk_lo == dk_hi && dq_lo == dk_lo;
  }
  bool ranges_full = true;
  if (mask.ranges.on) {
    bool any_visible = false;
    mask.ranges.classify(q_lo, q_hi, k_lo, k_hi, any_visible, ranges_full);
    if (!any_visible) return TileKind::kSkip;  // no entry reaches the tile
  }
  const bool causal_full = !mask.causal || k_hi <= q_lo;
  const bool window_full = mask.window <= 0 || q_hi - k_lo < mask.window;
  return causal_full && window_full && one_document && ranges_full ? TileKind::kFull : TileKind::kPartial;
}

// Query rows [q_first, q_first + q_rows) against key rows [k_first, k_first + k_rows), with
// sequence lengths seq_q, seq_k. A tile is skipped when the mask hides all of it, and
// "full" (no per-element mask) only when every row and column is inside its sequence too.
// Where its rows cross from one segment to the next (a zigzag rank's two chunks), each piece
// is judged on its own positions, as the host's classify_tile (src/kernels/tile_visibility.hpp)
// does: the span between two distant chunks holds keys neither sees.
__device__ __forceinline__ TileKind classify_tile(const DeviceMask& mask, const DevicePositions& qpos,
                                                  const DevicePositions& kpos, int q_first, int q_rows, int seq_q,
                                                  int k_first, int k_rows, int seq_k) {
  const int q_last = min(q_first + q_rows, seq_q) - 1;
  const int k_last = min(k_first + k_rows, seq_k) - 1;
  if (q_last < q_first || k_last < k_first) return TileKind::kSkip;
  const bool in_bounds = q_first + q_rows <= seq_q && k_first + k_rows <= seq_k;
  if (!mask.any()) return in_bounds ? TileKind::kFull : TileKind::kPartial;
  // Rows whose span crosses where their map's second segment starts are judged as two pieces,
  // one per segment: up to four (query piece, key piece) pairs. The pieces' ends are chosen by
  // selects in one loop that is not unrolled, so that the kernels hold one copy of
  // classify_positions and no array indexed at run time (which would go through local memory).
  const bool q_split = q_first < qpos.length0 && q_last >= qpos.length0;
  const bool k_split = k_first < kpos.length0 && k_last >= kpos.length0;
  bool any_visible = false, all_full = true;
  RFA_CUDA_ROLLED_LOOP
  for (int pair = 0; pair < 4; ++pair) {
    const bool q_second = pair / 2 == 1, k_second = pair % 2 == 1;
    if ((q_second && !q_split) || (k_second && !k_split)) continue;
    const int qa = q_second ? int(qpos.length0) : q_first, qb = q_split && !q_second ? int(qpos.length0) - 1 : q_last;
    const int ka = k_second ? int(kpos.length0) : k_first, kb = k_split && !k_second ? int(kpos.length0) - 1 : k_last;
    const TileKind v = classify_positions(mask, qpos.at(qa), qpos.at(qb), kpos.at(ka), kpos.at(kb));
    any_visible = any_visible || v != TileKind::kSkip;
    all_full = all_full && v == TileKind::kFull;
  }
  if (!any_visible) return TileKind::kSkip;
  return in_bounds && all_full ? TileKind::kFull : TileKind::kPartial;
}

// How many of `rows` rows at positions start, start + stride, ... (stride >= 1) lie at or before
// `position`. A position further from a negative start than int64 spans (a window's reach) is
// after every row.
__host__ __device__ inline std::int64_t rows_at_or_before(std::int64_t position, std::int64_t start,
                                                          std::int64_t stride, std::int64_t rows) {
  if (rows <= 0 || position < start) return 0;
  if (start < 0 && position > INT64_MAX + start) return rows;
  const std::int64_t n = (position - start) / stride + 1;
  return n < rows ? n : rows;
}

// The least and the greatest position of rows [first, last] (first <= last) of a map: each of its
// pieces increases, so they lie at the ends of the rows' part of each piece.
__host__ __device__ inline void position_span(const DevicePositions& p, int first, int last, std::int64_t& lo,
                                              std::int64_t& hi) {
  lo = p.at(first);
  hi = p.at(last);
  if (first < p.length0 && last >= p.length0) {  // rows on both pieces
    const std::int64_t second_first = p.at(p.length0), first_last = p.at(p.length0 - 1);
    lo = second_first < lo ? second_first : lo;
    hi = first_last > hi ? first_last : hi;
  }
}

// The first of a map's `seq` rows at a position after `x` (seq where none is): the first piece's
// rows come first, and each piece increases.
__host__ __device__ inline std::int64_t first_row_after(std::int64_t x, const DevicePositions& p, std::int64_t seq) {
  const std::int64_t rows0 = p.length0 < seq ? p.length0 : seq;
  const std::int64_t before0 = rows_at_or_before(x, p.start0, p.stride0, rows0);
  return before0 < rows0 ? before0 : rows0 + rows_at_or_before(x, p.start1, p.stride1, seq - rows0);
}

// One past the last of a map's `seq` rows at a position at or before `y` (0 where none is).
__host__ __device__ inline std::int64_t rows_through(std::int64_t y, const DevicePositions& p, std::int64_t seq) {
  const std::int64_t rows0 = p.length0 < seq ? p.length0 : seq;
  const std::int64_t seen1 = rows_at_or_before(y, p.start1, p.stride1, seq - rows0);
  return seen1 > 0 ? rows0 + seen1 : rows_at_or_before(y, p.start0, p.stride0, rows0);
}

// The tiles of `tile_rows` rows, of a map's `seq` rows, that the walk over them takes: [begin,
// end), from the tile of the first row at a position at or after `lo` to the tile of the last row
// at or before `hi` (INT64_MIN and INT64_MAX: no bound; none where lo > hi).
struct TileSpan {
  int begin, end;
};
__host__ __device__ inline TileSpan tiles_over(std::int64_t lo, std::int64_t hi, const DevicePositions& p, int seq,
                                               int tile_rows) {
  const int tiles = (seq + tile_rows - 1) / tile_rows;
  if (lo > hi) return TileSpan{0, 0};
  TileSpan span{0, tiles};
  if (hi != INT64_MAX) span.end = static_cast<int>((rows_through(hi, p, seq) + tile_rows - 1) / tile_rows);
  if (lo != INT64_MIN) {
    const std::int64_t first = first_row_after(lo - 1, p, seq);
    span.begin = first < seq ? static_cast<int>(first / tile_rows) : tiles;
  }
  if (span.begin > span.end) span.begin = span.end;
  return span;
}

// The last position a window of w >= 1 positions reaches from `position` on, position + w - 1,
// and the first it reaches back to, position - w + 1, each held at the int64 range's end: a
// window may be any size (one longer than every distance hides nothing).
__host__ __device__ inline std::int64_t window_reach_after(std::int64_t position, std::int64_t w) {
  return position > INT64_MAX - (w - 1) ? INT64_MAX : position + (w - 1);
}
__host__ __device__ inline std::int64_t window_reach_before(std::int64_t position, std::int64_t w) {
  return position < INT64_MIN + (w - 1) ? INT64_MIN : position - (w - 1);
}

// Narrows [lo, hi] to its part in [other_lo, other_hi].
__host__ __device__ inline void intersect_span(std::int64_t& lo, std::int64_t& hi, std::int64_t other_lo,
                                               std::int64_t other_hi) {
  lo = other_lo > lo ? other_lo : lo;
  hi = other_hi < hi ? other_hi : hi;
}

// The whole tiles of `tile_rows` rows among the rows of one piece of a map (its `rows` rows from
// row `first_row` on, at positions start, start + stride, ...) whose positions all lie in [lo,
// hi] (INT64_MIN and INT64_MAX: no bound): [begin, end), none where begin == end.
__host__ __device__ inline TileSpan whole_tiles_within(std::int64_t lo, std::int64_t hi, std::int64_t first_row,
                                                       std::int64_t start, std::int64_t stride, std::int64_t rows,
                                                       int tile_rows) {
  if (lo > hi || rows <= 0) return TileSpan{0, 0};
  const std::int64_t a = first_row + (lo == INT64_MIN ? 0 : rows_at_or_before(lo - 1, start, stride, rows));
  const std::int64_t b = first_row + (hi == INT64_MAX ? rows : rows_at_or_before(hi, start, stride, rows));
  const int begin = static_cast<int>((a + tile_rows - 1) / tile_rows), end = static_cast<int>(b / tile_rows);
  return begin < end ? TileSpan{begin, end} : TileSpan{0, 0};
}

// Under documents, narrows [lo, hi] to the document that positions [p_lo, p_hi] all lie in, or
// to none (lo > hi) where they lie in more than one: a pair of positions in different documents
// is hidden.
__device__ inline void within_one_document(const DeviceMask& mask, std::int64_t p_lo, std::int64_t p_hi,
                                           std::int64_t& lo, std::int64_t& hi) {
  if (!mask.documents()) return;
  if (mask.document_of(p_lo) != mask.document_of(p_hi)) {
    lo = 1;
    hi = 0;
    return;
  }
  std::int64_t doc_lo = 0, doc_hi = 0;
  mask.document_span(p_lo, p_lo, doc_lo, doc_hi);
  intersect_span(lo, hi, doc_lo, doc_hi);
}

// What a walk over the key tiles of k_rows rows needs to classify, for query rows [q_first,
// q_first + q_rows): the tiles in [begin_tile, end_tile), of which those in [full_begin,
// full_end) are full.
struct KeyWalk {
  int begin_tile, end_tile, full_begin, full_end;
};

// The key walk of query rows [q_first, q_first + q_rows) over tiles of k_rows keys, found once
// per tile of queries so that the walk classifies (classify_tile, up to four pairs of pieces in
// 64-bit arithmetic, ahead of each tile's loads) only the tiles where an edge of the mask passes.
// Each test of the mask is ANDed with the rest, and each piece of a map increases, so with
// [q_lo, q_hi] the least and greatest of the rows' query positions, the walk takes only the key
// tiles holding a key in each of these spans of positions that a part of the mask leaves visible:
// - the causal mask: keys at or before q_hi;
// - a window: keys after q_lo less the window;
// - documents: keys in the documents of q_lo to q_hi (document_span);
// - ranges: keys an entry of the rows' bands reaches (DeviceRanges::key_span).
// With the query rows inside the sequence and no ranges, the key tiles of the keys' first piece
// whose every key every query sees are full without being classified (classify_tile calls them
// full): their keys lie at or before q_lo under the causal mask, after q_hi less the window under
// a window, and in the one document of q_lo to q_hi under documents (none where the queries span
// two). None are known full without the causal mask, a window or documents.
__device__ inline KeyWalk key_tile_walk(const DeviceMask& mask, const DevicePositions& qpos,
                                        const DevicePositions& kpos, int q_first, int q_rows, int seq_q, int k_rows,
                                        int seq_k) {
  KeyWalk walk{0, (seq_k + k_rows - 1) / k_rows, 0, 0};
  const int q_last = (q_first + q_rows < seq_q ? q_first + q_rows : seq_q) - 1;
  if (q_last < q_first) return walk;
  std::int64_t q_lo = 0, q_hi = 0;
  position_span(qpos, q_first, q_last, q_lo, q_hi);
  std::int64_t lo = INT64_MIN, hi = INT64_MAX;  // the key positions the mask may leave visible
  if (mask.causal) hi = q_hi;
  if (mask.window > 0) lo = window_reach_before(q_lo, mask.window);
  std::int64_t part_lo = 0, part_hi = 0;
  if (mask.documents()) {
    mask.document_span(q_lo, q_hi, part_lo, part_hi);
    intersect_span(lo, hi, part_lo, part_hi);
  }
  if (mask.ranges.on) {
    mask.ranges.key_span(q_lo, q_hi, part_lo, part_hi);
    intersect_span(lo, hi, part_lo, part_hi);
  }
  const TileSpan span = tiles_over(lo, hi, kpos, seq_k, k_rows);
  walk.begin_tile = span.begin;
  walk.end_tile = span.end;
  if (mask.any() && !mask.ranges.on && q_first + q_rows <= seq_q) {
    std::int64_t full_lo = INT64_MIN, full_hi = INT64_MAX;  // the key positions every query sees
    if (mask.causal) full_hi = q_lo;
    if (mask.window > 0) full_lo = window_reach_before(q_hi, mask.window);
    within_one_document(mask, q_lo, q_hi, full_lo, full_hi);
    const std::int64_t rows0 = kpos.length0 < seq_k ? kpos.length0 : seq_k;  // key rows on the first piece
    const TileSpan full = whole_tiles_within(full_lo, full_hi, 0, kpos.start0, kpos.stride0, rows0, k_rows);
    walk.full_begin = full.begin;
    walk.full_end = full.end;
  }
  return walk;
}

// What a walk over the query tiles of q_rows rows needs to classify, for key rows [k_first,
// k_first + k_rows): the tiles in [begin_tile, end_tile), of which those in [full_begin,
// full_end) are full.
struct QueryWalkBounds {
  int begin_tile, end_tile, full_begin, full_end;
};

// The backward's mirror of key_tile_walk, for a tile of keys and the query tiles it walks: with
// [k_lo, k_hi] the least and greatest of the rows' key positions, the walk takes only the query
// tiles holding a query in each of these spans:
// - the causal mask: queries at or after k_lo;
// - a window: queries before k_hi plus the window;
// - documents: queries in the documents of k_lo to k_hi (document_span);
// - ranges: queries whose band's entries reach a key of [k_lo, k_hi] (DeviceRanges::query_span,
//   a pass over every entry, up to its limit).
// With the key rows inside the sequence and no ranges, the query tiles of the queries' last
// piece whose every query sees every key are full without being classified: their queries lie at
// or after k_hi under the causal mask, before k_lo plus the window under a window, and in the one
// document of k_lo to k_hi under documents (none where the keys span two). None are known full
// without the causal mask, a window or documents.
__device__ inline QueryWalkBounds query_tile_walk(const DeviceMask& mask, const DevicePositions& qpos,
                                                  const DevicePositions& kpos, int k_first, int k_rows, int seq_k,
                                                  int q_rows, int seq_q) {
  QueryWalkBounds walk{0, (seq_q + q_rows - 1) / q_rows, 0, 0};
  const int k_last = (k_first + k_rows < seq_k ? k_first + k_rows : seq_k) - 1;
  if (k_last < k_first) return walk;
  std::int64_t k_lo = 0, k_hi = 0;
  position_span(kpos, k_first, k_last, k_lo, k_hi);
  std::int64_t lo = INT64_MIN, hi = INT64_MAX;  // the query positions the mask may leave visible
  if (mask.causal) lo = k_lo;
  if (mask.window > 0) hi = window_reach_after(k_hi, mask.window);
  std::int64_t part_lo = 0, part_hi = 0;
  if (mask.documents()) {
    mask.document_span(k_lo, k_hi, part_lo, part_hi);
    intersect_span(lo, hi, part_lo, part_hi);
  }
  if (mask.ranges.on && mask.ranges.query_span(k_lo, k_hi, part_lo, part_hi)) intersect_span(lo, hi, part_lo, part_hi);
  const TileSpan span = tiles_over(lo, hi, qpos, seq_q, q_rows);
  walk.begin_tile = span.begin;
  walk.end_tile = span.end;
  if (mask.any() && !mask.ranges.on && k_first + k_rows <= seq_k) {
    std::int64_t full_lo = INT64_MIN, full_hi = INT64_MAX;  // the query positions that see every key
    if (mask.causal) full_lo = k_hi;
    if (mask.window > 0) full_hi = window_reach_after(k_lo, mask.window);
    within_one_document(mask, k_lo, k_hi, full_lo, full_hi);
    const std::int64_t rows0 = qpos.length0 < seq_q ? qpos.length0 : seq_q;  // query rows on the first piece
    const TileSpan full =
        rows0 < seq_q ? whole_tiles_within(full_lo, full_hi, rows0, qpos.start1, qpos.stride1, seq_q - rows0, q_rows)
                      : whole_tiles_within(full_lo, full_hi, 0, qpos.start0, qpos.stride0, seq_q, q_rows);
    walk.full_begin = full.begin;
    walk.full_end = full.end;
  }
  return walk;
}

// One side of the pairs a thread masks in a partial tile (a query row, or a key column): its
// position and its document, found once for the several pairs it is in rather than at each.
struct MaskedIndex {
  std::int64_t position;  // 0 outside the sequence
  std::int64_t document;  // 0 without documents, or outside the sequence
  bool inside;            // the local index is inside its sequence
};

__device__ __forceinline__ MaskedIndex masked_index(const DeviceMask& mask, const DevicePositions& positions, int i,
                                                    int seq) {
  MaskedIndex m{0, 0, i < seq};
  if (m.inside) {
    m.position = positions.at(i);
    if (mask.documents()) m.document = mask.document_of(m.position);
  }
  return m;
}

// Whether a kernel holds the ranges' code in its test of a pair: the Hopper kernels refuse masks
// given as ranges, and their consumers have no registers to spare for code they never run.
enum RangesInPair : bool { kWithoutRanges = false, kWithRanges = true };

// Whether query q sees key k (both from masked_index under the same mask): inside both
// sequences, the causal and window rule, one document, and an entry of the ranges.
template <RangesInPair kRanges = kWithRanges>
__device__ __forceinline__ bool visible_pair(const DeviceMask& mask, const MaskedIndex& q, const MaskedIndex& k) {
  return q.inside && k.inside && mask.in_causal_window(q.position, k.position) && q.document == k.document &&
         (!kRanges || !mask.ranges.on || mask.ranges.visible(q.position, k.position));
}

// Which side of the scores a warp's accumulator rows are: queries (S = Q K^T in the forward and
// the dQ pass) or keys (S^T = K Q^T in the backward).
enum class FragmentRows { kQueries, kKeys };

// Which of one thread's scores in a partial tile the mask leaves visible, as bits: bit 4 nb + e
// for element e of block nb of a warp's accumulators, kBlocks blocks of 8 columns as mma m16n8k16
// lays them out (g = lane / 4, t = lane % 4): element e of block nb is row first_row + g + 8
// (e / 2), column first_col + 8 nb + 2 t + e % 2, both local indices of their side. The thread's
// two rows and each of its columns find their position and document once (masked_index), not at
// every pair. Out of line on the device: only partial tiles call it, and its searches through
// documents and ranges would otherwise size the registers of the kernels' whole key loop, whose
// accumulators would then spill (perf/RESULTS.md, "2026-12-05 — the sm80 forward with 32 query
// rows a warp (compile only)"). The masks are passed by value, so that no address of a kernel
// parameter escapes into the call.
template <FragmentRows kRows, int kBlocks>
__device__ RFA_CUDA_OUT_OF_LINE std::uint64_t fragment_visibility(const DeviceMask mask,
                                                                  const DevicePositions q_positions,
                                                                  const DevicePositions k_positions, int seq_q,
                                                                  int seq_k, int first_row, int first_col, int lane) {
  static_assert(4 * kBlocks <= 64, "a thread's elements fit the bits");
  constexpr bool kRowsAreQueries = kRows == FragmentRows::kQueries;
  const DevicePositions& row_positions = kRowsAreQueries ? q_positions : k_positions;
  const DevicePositions& col_positions = kRowsAreQueries ? k_positions : q_positions;
  const int row_seq = kRowsAreQueries ? seq_q : seq_k, col_seq = kRowsAreQueries ? seq_k : seq_q;
  MaskedIndex rows[2];
  RFA_CUDA_UNROLLED_LOOP
  for (int half = 0; half < 2; ++half)
    rows[half] = masked_index(mask, row_positions, first_row + lane / 4 + 8 * half, row_seq);
  std::uint64_t bits = 0;
  RFA_CUDA_UNROLLED_LOOP
  for (int nb = 0; nb < kBlocks; ++nb) {
    RFA_CUDA_UNROLLED_LOOP
    for (int c = 0; c < 2; ++c) {
      const MaskedIndex col = masked_index(mask, col_positions, first_col + 8 * nb + 2 * (lane % 4) + c, col_seq);
      RFA_CUDA_UNROLLED_LOOP
      for (int half = 0; half < 2; ++half) {
        const bool seen = kRowsAreQueries ? visible_pair(mask, rows[half], col) : visible_pair(mask, col, rows[half]);
        if (seen) bits |= std::uint64_t{1} << (4 * nb + 2 * half + c);
      }
    }
  }
  return bits;
}

// Sets to -inf the scores of a partial tile that the mask hides, in one thread's share of a
// warp's accumulators (the layout and arguments of fragment_visibility).
template <FragmentRows kRows, int kBlocks>
__device__ __forceinline__ void mask_fragment(float (&scores)[kBlocks][4], const DeviceMask& mask,
                                              const DevicePositions& q_positions, const DevicePositions& k_positions,
                                              int seq_q, int seq_k, int first_row, int first_col, int lane) {
  const std::uint64_t bits =
      fragment_visibility<kRows, kBlocks>(mask, q_positions, k_positions, seq_q, seq_k, first_row, first_col, lane);
  RFA_CUDA_UNROLLED_LOOP
  for (int nb = 0; nb < kBlocks; ++nb) {
    RFA_CUDA_UNROLLED_LOOP
    for (int e = 0; e < 4; ++e) {
      if (((bits >> (4 * nb + e)) & 1u) == 0) scores[nb][e] = -INFINITY;
    }
  }
}

}  // namespace detail
}  // namespace rfa_cuda
