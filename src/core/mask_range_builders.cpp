// SPDX-License-Identifier: BSD-3-Clause
#include "core/mask_range_builders.hpp"

#include <algorithm>
#include <limits>

#include "core/documents.hpp"
#include "core/error.hpp"

namespace rfa {
namespace {

rfa_mask_range_t entry(std::int64_t q_begin, std::int64_t q_end, std::int64_t k_begin, std::int64_t k_end,
                       rfa_range_kind_t kind, std::int64_t band_lo = 0, std::int64_t band_hi = 0) {
  rfa_mask_range_t r;
  r.q_begin = q_begin;
  r.q_end = q_end;
  r.k_begin = k_begin;
  r.k_end = k_end;
  r.band_lo = band_lo;
  r.band_hi = band_hi;
  r.kind = kind;
  return r;
}

void require_length(std::int64_t seq_total) {
  require(seq_total >= 1, "seq_total is ", seq_total, "; it must be >= 1");
}

/// The pairs (a, b) of [0, n) with |a - b| <= radius: n on the diagonal and n - d each way at
/// every distance d = 1 .. m, m = min(radius, n - 1), which is n + m (2 n - m - 1) (n <= 2^60);
/// INT64_MAX where that overflows.
std::int64_t pairs_within(std::int64_t n, std::int64_t radius) {
  const std::int64_t m = std::min(radius, n - 1);
  std::int64_t off_diagonal = 0, pairs = 0;
  if (__builtin_mul_overflow(m, 2 * n - m - 1, &off_diagonal) || __builtin_add_overflow(off_diagonal, n, &pairs))
    return std::numeric_limits<std::int64_t>::max();
  return pairs;
}

}  // namespace

std::vector<rfa_mask_range_t> causal_ranges(std::int64_t seq_total) {
  require_length(seq_total);
  return {entry(0, seq_total, 0, seq_total, RFA_RANGE_CAUSAL)};
}

std::vector<rfa_mask_range_t> sliding_window_ranges(std::int64_t seq_total, std::int64_t window, bool causal) {
  require_length(seq_total);
  require(window >= 1, "window is ", window, "; it must be >= 1 (q - k < window)");
  // The offset k - q runs from -(window - 1) up to 0 (causal) or up to the sequence's end; a
  // window longer than the sequence hides nothing more than one as long as it, whose offsets
  // the list's checks take whatever the window (they refuse offsets beyond +-2^61).
  const std::int64_t reach = std::min(window, seq_total);
  return {entry(0, seq_total, 0, seq_total, RFA_RANGE_BAND, 1 - reach, causal ? 0 : seq_total)};
}

std::int64_t document_count(const std::int64_t* bounds, std::int64_t count) {
  require(count >= 2, "boundary_count is ", count, "; it must be >= 2 (documents + 1 cumulative boundaries)");
  validate_document_bounds(bounds, count, -1, "doc_boundaries");
  require(bounds[count - 1] >= 1, "doc_boundaries[", count - 1,
          "] is 0: the last boundary is the sequence's length, S >= 1");
  std::int64_t documents = 0;  // one entry each that is not empty
  for (std::int64_t d = 0; d + 1 < count; ++d) documents += bounds[d] < bounds[d + 1] ? 1 : 0;
  require(documents <= kMaxBuiltRangeEntries, "the documents' mask of ", documents,
          " documents needs as many entries, more than 2^26");
  return documents;
}

std::vector<rfa_mask_range_t> document_ranges(const std::int64_t* bounds, std::int64_t count, bool causal) {
  const std::int64_t documents = document_count(bounds, count);
  std::vector<rfa_mask_range_t> list;
  list.reserve(std::size_t(documents));
  for (std::int64_t d = 0; d + 1 < count; ++d) {
    const std::int64_t b = bounds[d], e = bounds[d + 1];
    if (b < e) list.push_back(entry(b, e, b, e, causal ? RFA_RANGE_CAUSAL : RFA_RANGE_FULL));
  }
  return list;
}

std::vector<rfa_mask_range_t> prefix_lm_ranges(std::int64_t seq_total, std::int64_t prefix) {
  require_length(seq_total);
  require(prefix >= 0 && prefix <= seq_total, "prefix is ", prefix, "; it must lie in [0, seq_total = ", seq_total,
          "]");
  std::vector<rfa_mask_range_t> list = {entry(0, seq_total, 0, seq_total, RFA_RANGE_CAUSAL)};
  if (prefix > 0) list.push_back(entry(0, seq_total, 0, prefix, RFA_RANGE_FULL));  // everyone sees the prefix
  return list;
}

std::int64_t block_causal_count(std::int64_t seq_total, std::int64_t block) {
  require_length(seq_total);
  require(block >= 1, "block is ", block, "; it must be >= 1");
  const std::int64_t blocks = (seq_total - 1) / block + 1;
  require(blocks <= kMaxBuiltRangeEntries, "the block-causal mask of ", seq_total, " tokens in blocks of ", block,
          " needs ", blocks, " entries, more than 2^26");
  return blocks;
}

std::vector<rfa_mask_range_t> block_causal_ranges(std::int64_t seq_total, std::int64_t block) {
  const std::int64_t blocks = block_causal_count(seq_total, block);
  std::vector<rfa_mask_range_t> list;
  list.reserve(std::size_t(blocks));
  for (std::int64_t i = 0; i < blocks; ++i) {  // block i covers [i * block, its end), the last one cut at S
    const std::int64_t b = i * block, e = i + 1 < blocks ? b + block : seq_total;
    list.push_back(entry(b, e, 0, e, RFA_RANGE_FULL));
  }
  return list;
}

std::int64_t grid_neighbourhood_count(std::int64_t nx, std::int64_t ny, std::int64_t nz, std::int64_t radius) {
  require(nx >= 1 && ny >= 1 && nz >= 1, "the grid is ", nx, " x ", ny, " x ", nz,
          "; every extent must be >= 1 (nz = 1 for a 2-D grid)");
  require(radius >= 0, "radius is ", radius, "; it must be >= 0");
  std::int64_t points = 0;
  if (__builtin_mul_overflow(nx, ny, &points) || __builtin_mul_overflow(points, nz, &points) ||
      points > (std::int64_t(1) << 60)) {
    fail(RFA_ERROR_INVALID_ARGUMENT, "the grid ", nx, " x ", ny, " x ", nz,
         " has too many points for 64-bit positions");
  }
  // Grid row (y, z) sees row (y2, z2) when |y - y2| and |z - z2| are both within the radius.
  const std::int64_t pairs_y = pairs_within(ny, radius), pairs_z = pairs_within(nz, radius);
  if (pairs_y > kMaxBuiltRangeEntries || pairs_z > kMaxBuiltRangeEntries || pairs_y * pairs_z > kMaxBuiltRangeEntries) {
    fail(RFA_ERROR_INVALID_ARGUMENT, "the neighbourhood of radius ", radius, " on a ", nx, " x ", ny, " x ", nz,
         " grid needs more than 2^26 entries");
  }
  return pairs_y * pairs_z;
}

std::vector<rfa_mask_range_t> grid_neighbourhood_ranges(std::int64_t nx, std::int64_t ny, std::int64_t nz,
                                                        std::int64_t radius) {
  const std::int64_t count = grid_neighbourhood_count(nx, ny, nz, radius);  // checked, not too long
  std::vector<rfa_mask_range_t> list;
  list.reserve(std::size_t(count));
  // Grid row (y, z) holds positions [nx * (y + ny * z), + nx); its points see, in each row
  // (y2, z2) within the radius and inside the grid, the points with |dx| <= radius: a band of
  // offsets -radius..radius from the rows' first points, held at the row's nx - 1 (a wider band
  // sees no more, and offsets past +-2^61 are refused where the list is used).
  const std::int64_t reach = std::min(radius, nx - 1);
  for (std::int64_t z = 0; z < nz; ++z)
    for (std::int64_t y = 0; y < ny; ++y) {
      const std::int64_t q = nx * (y + ny * z);
      for (std::int64_t z2 = z - std::min(radius, z); z2 <= z + std::min(radius, nz - 1 - z); ++z2) {
        for (std::int64_t y2 = y - std::min(radius, y); y2 <= y + std::min(radius, ny - 1 - y); ++y2) {
          const std::int64_t k = nx * (y2 + ny * z2);
          list.push_back(entry(q, q + nx, k, k + nx, RFA_RANGE_BAND, -reach, reach));
        }
      }
    }
  return list;
}

}  // namespace rfa
