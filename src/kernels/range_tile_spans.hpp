// SPDX-License-Identifier: BSD-3-Clause
// A partial tile's mask given as ranges, row by row: the columns each query row of the tile
// sees, as at most kMaxSpans spans of column indices, found once per tile from the row's band
// of entries. The per-score mask and the register blocks the products leave out
// (tile_visibility.hpp) then test spans instead of every entry of the band. A row whose
// entries cut the tile into more spans is tested entry by entry.
#pragma once

#include <algorithm>
#include <cstdint>

#include "core/mask_ranges.hpp"

namespace rfa {
namespace kernels {

class RangeTileSpans {
 public:
  static constexpr int kMaxRows = 256;  ///< the largest query tile of the host kernels
  static constexpr int kMaxSpans = 4;

  /// The spans of `rows` queries at `q_positions` over `cols` keys at increasing `k_positions`
  /// (both arrays must outlive this object).
  RangeTileSpans(const MaskRangeIndex& index, const std::int64_t* q_positions, int rows,
                 const std::int64_t* k_positions, int cols)
      : index_(index), q_(q_positions), k_(k_positions), rows_(rows), cols_(cols) {
    for (int i = 0; i < rows; ++i) build_row(i);
  }

  /// Whether query row i sees key column j through the ranges.
  bool visible(int i, int j) const {
    if (count_[i] < 0) return index_.visible_in_band(band_[i], q_[i], k_[j]);
    for (int s = 0; s < count_[i]; ++s)
      if (j >= first_[i][s] && j < end_[i][s]) return true;
    return false;
  }

  /// Calls hide(j) for every key column row i does not see through the ranges, in order: the
  /// gaps between the row's spans, without a test per column.
  template <class Hide>
  void for_each_hidden_column(int i, Hide&& hide) const {
    if (count_[i] < 0) {
      for (int j = 0; j < cols_; ++j)
        if (!index_.visible_in_band(band_[i], q_[i], k_[j])) hide(j);
      return;
    }
    int j = 0;
    for (int s = 0; s < count_[i]; ++s) {
      for (; j < first_[i][s]; ++j) hide(j);
      j = end_[i][s];
    }
    for (; j < cols_; ++j) hide(j);
  }

  /// Whether some query row of [q0, q1) may see some key column of [k0, k1) through the ranges.
  bool any_visible(int q0, int q1, int k0, int k1) const {
    for (int i = q0; i < std::min(q1, rows_); ++i) {
      if (count_[i] < 0) return true;  // not in spans: unsure
      for (int s = 0; s < count_[i]; ++s)
        if (first_[i][s] < k1 && end_[i][s] > k0) return true;
    }
    return false;
  }

 private:
  void build_row(int i) {
    const std::int64_t q = q_[i];
    band_[i] = index_.band_of(q);
    count_[i] = 0;
    if (band_[i] < 0 || cols_ == 0) return;
    const std::int64_t k_first = k_[0], k_last = k_[cols_ - 1];
    constexpr int kRaw = 4 * kMaxSpans;
    int raw_first[kRaw], raw_end[kRaw], n = 0;
    for (std::int64_t e = index_.band_offset[band_[i]]; e < index_.band_offset[band_[i] + 1]; ++e) {
      const RangeEntry& r = index_.entries[e];
      const std::int64_t a = std::max(r.k_begin, q + r.diag_lo), b = std::min(r.k_end - 1, q + r.diag_hi);
      if (a > b || b < k_first || a > k_last) continue;
      const int c0 = int(std::lower_bound(k_, k_ + cols_, a) - k_);
      const int c1 = int(std::upper_bound(k_, k_ + cols_, b) - k_);
      if (c0 >= c1) continue;
      if (n == kRaw) {  // too many pieces: entry by entry
        count_[i] = -1;
        return;
      }
      raw_first[n] = c0;
      raw_end[n] = c1;
      ++n;
    }
    // Sorted by first column (insertion sort of a few), then merged where they meet.
    for (int x = 1; x < n; ++x)
      for (int y = x; y > 0 && raw_first[y] < raw_first[y - 1]; --y) {
        std::swap(raw_first[y], raw_first[y - 1]);
        std::swap(raw_end[y], raw_end[y - 1]);
      }
    int m = 0;
    for (int x = 0; x < n; ++x) {
      if (m > 0 && raw_first[x] <= end_[i][m - 1]) {
        end_[i][m - 1] = std::max<int>(end_[i][m - 1], raw_end[x]);
        continue;
      }
      if (m == kMaxSpans) {
        count_[i] = -1;
        return;
      }
      first_[i][m] = std::int16_t(raw_first[x]);
      end_[i][m] = std::int16_t(raw_end[x]);
      ++m;
    }
    count_[i] = std::int16_t(m);
  }

  const MaskRangeIndex& index_;
  const std::int64_t* q_;
  const std::int64_t* k_;
  int rows_, cols_;
  std::int64_t band_[kMaxRows];
  std::int16_t count_[kMaxRows];  ///< spans of each row; -1: tested entry by entry
  std::int16_t first_[kMaxRows][kMaxSpans], end_[kMaxRows][kMaxSpans];
};

}  // namespace kernels
}  // namespace rfa
