// SPDX-License-Identifier: BSD-3-Clause
// A mask given as ranges (RFA_MASK_RANGES; docs/masks.md): a list of entries, each a rectangle
// of query and key positions cut by a diagonal band, whose union is the set of visible pairs.
// The engine keeps the list as an index by query position (bands of queries that see the same
// entries), so that a tile, a ring step or a row finds its few entries without a scan of all.
#pragma once

#include <Kokkos_Core.hpp>
#include <cstdint>
#include <utility>
#include <vector>

#include "rfa/rfa.h"

namespace rfa {

/// One entry as the kernels test it: queries [q_begin, q_end) see the keys [k_begin, k_end)
/// whose offset k - q lies in [diag_lo, diag_hi] (the public kinds all take this form).
struct RangeEntry {
  std::int64_t q_begin, q_end, k_begin, k_end, diag_lo, diag_hi;
};

/// Stands for an unbounded diagonal offset: beyond any k - q, far from overflow.
constexpr std::int64_t kUnboundedOffset = std::int64_t(1) << 62;

/// The kernels' view of the index of a range list (host memory owned by a MaskRanges). Band b
/// holds the queries [band_begin[b], band_end[b]), which all see through the same entries
/// entries[band_offset[b]] .. entries[band_offset[b + 1] - 1] (their key ranges cut to what
/// some query of the band can see); queries in no band see nothing. `on` is false for the
/// other masks.
struct MaskRangeIndex {
  const std::int64_t* band_begin = nullptr;
  const std::int64_t* band_end = nullptr;
  const std::int64_t* band_offset = nullptr;
  const RangeEntry* entries = nullptr;
  std::int64_t band_count = 0;
  bool on = false;

  /// The first band that ends after `position` (band_count if none).
  KOKKOS_INLINE_FUNCTION std::int64_t first_band_ending_after(std::int64_t position) const {
    std::int64_t lo = 0, hi = band_count;
    while (lo < hi) {
      const std::int64_t mid = lo + (hi - lo) / 2;
      if (band_end[mid] > position)
        hi = mid;
      else
        lo = mid + 1;
    }
    return lo;
  }
  /// The band holding query `position`, or -1.
  KOKKOS_INLINE_FUNCTION std::int64_t band_of(std::int64_t position) const {
    const std::int64_t b = first_band_ending_after(position);
    return b < band_count && band_begin[b] <= position ? b : -1;
  }
  /// Whether some entry of band `b` (band_of(q)) lets query q see key k.
  KOKKOS_INLINE_FUNCTION bool visible_in_band(std::int64_t b, std::int64_t q, std::int64_t k) const {
    if (b < 0) return false;
    const std::int64_t d = k - q;
    for (std::int64_t e = band_offset[b]; e < band_offset[b + 1]; ++e) {
      const RangeEntry& r = entries[e];
      if (k >= r.k_begin && k < r.k_end && d >= r.diag_lo && d <= r.diag_hi) return true;
    }
    return false;
  }
  KOKKOS_INLINE_FUNCTION bool visible(std::int64_t q, std::int64_t k) const {
    return visible_in_band(band_of(q), q, k);
  }

  /// The keys [lo, hi] that the entries of the bands holding queries of [q_lo, q_hi] reach
  /// (lo > hi: none): a bound of what those queries see, found without testing a pair.
  void key_span(std::int64_t q_lo, std::int64_t q_hi, std::int64_t& lo, std::int64_t& hi) const {
    lo = INT64_MAX;
    hi = INT64_MIN;
    for (std::int64_t b = first_band_ending_after(q_lo); b < band_count && band_begin[b] <= q_hi; ++b)
      for (std::int64_t e = band_offset[b]; e < band_offset[b + 1]; ++e) {
        if (entries[e].k_begin < lo) lo = entries[e].k_begin;
        if (entries[e].k_end - 1 > hi) hi = entries[e].k_end - 1;
      }
  }

  /// Classifies the rectangle of queries [q_lo, q_hi] x keys [k_lo, k_hi] (inclusive): `any` if
  /// some pair of it may be visible, `all` if an entry of each band covers every pair (false
  /// where unsure: the caller then tests pair by pair).
  KOKKOS_INLINE_FUNCTION void classify(std::int64_t q_lo, std::int64_t q_hi, std::int64_t k_lo, std::int64_t k_hi,
                                       bool& any, bool& all) const {
    any = false;
    all = true;
    std::int64_t next = q_lo;  // the first query not yet in a band (a gap breaks `all`)
    for (std::int64_t b = first_band_ending_after(q_lo); b < band_count && band_begin[b] <= q_hi; ++b) {
      const std::int64_t qa = band_begin[b] > q_lo ? band_begin[b] : q_lo;
      const std::int64_t qb = band_end[b] - 1 < q_hi ? band_end[b] - 1 : q_hi;
      if (qa > next) all = false;
      next = qb + 1;
      bool covered = false;
      for (std::int64_t e = band_offset[b]; e < band_offset[b + 1]; ++e) {
        const RangeEntry& r = entries[e];
        const std::int64_t ka = k_lo > r.k_begin ? k_lo : r.k_begin;
        const std::int64_t kb = k_hi < r.k_end - 1 ? k_hi : r.k_end - 1;
        if (ka > kb || kb - qa < r.diag_lo || ka - qb > r.diag_hi) continue;
        any = true;
        covered = covered || (r.k_begin <= k_lo && k_hi < r.k_end && k_lo - qb >= r.diag_lo && k_hi - qa <= r.diag_hi);
      }
      all = all && covered;
    }
    if (next <= q_hi) all = false;
  }
};

/// The keys of [lo, hi] (inclusive) that the index lets query `q` see, as sorted disjoint
/// intervals [first, last] (entries that overlap or touch merged), in `out` (cleared first).
void visible_key_intervals(const MaskRangeIndex& index, std::int64_t q, std::int64_t lo, std::int64_t hi,
                           std::vector<std::pair<std::int64_t, std::int64_t>>& out);

/// A validated range list and its index, built once per context (AttentionConfig::ranges).
class MaskRanges {
 public:
  /// Checks `count` public entries against a sequence of `seq_total` tokens (throws
  /// RFA_ERROR_INVALID_ARGUMENT naming `what`, the entry and the rule it breaks) and indexes
  /// them. Refuses a list whose index would exceed kMaxIndexEntries (entries that overlap in
  /// their queries are stored once per band they cover).
  MaskRanges(const rfa_mask_range_t* ranges, std::int64_t count, std::int64_t seq_total, const char* what);

  MaskRangeIndex index() const;
  const std::vector<rfa_mask_range_t>& entries() const { return public_; }
  std::int64_t hash() const { return hash_; }

  static constexpr std::int64_t kMaxIndexEntries = std::int64_t(1) << 26;

 private:
  std::vector<rfa_mask_range_t> public_;
  std::vector<std::int64_t> band_begin_, band_end_, band_offset_;
  std::vector<RangeEntry> entries_;
  std::int64_t hash_ = 0;
};

/// Throws rfa::Error (RFA_ERROR_INVALID_ARGUMENT) naming `what` and the entry unless each of the
/// `count` entries has 0 <= begin <= end <= seq_total for queries and keys, a known kind and,
/// for a band, band_lo <= band_hi; and unless `ranges` is non-null where count > 0.
void validate_mask_ranges(const rfa_mask_range_t* ranges, std::int64_t count, std::int64_t seq_total, const char* what);

/// A 64-bit FNV-1a hash of the entries' fields (band offsets only for bands, where they count),
/// so that ranks can agree on a whole list by one number; 0 entries hash alike.
std::int64_t mask_ranges_hash(const rfa_mask_range_t* ranges, std::int64_t count);

/// The entry in the kernels' form: its rectangle and the offsets k - q its kind lets through.
RangeEntry range_entry(const rfa_mask_range_t& r);

}  // namespace rfa
