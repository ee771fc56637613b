// SPDX-License-Identifier: BSD-3-Clause
// The common masks as lists of ranges (RFA_MASK_RANGES; docs/masks.md): what the C API's
// rfa_mask_ranges_* builders and rfa_run's --mask hand to a context. Each throws rfa::Error
// (RFA_ERROR_INVALID_ARGUMENT) naming the argument out of range.
#pragma once

#include <cstdint>
#include <vector>

#include "rfa/rfa.h"

namespace rfa {

/// k <= q over a sequence of `seq_total` tokens: one causal entry.
std::vector<rfa_mask_range_t> causal_ranges(std::int64_t seq_total);

/// q - k < window (and k <= q when `causal`): one band.
std::vector<rfa_mask_range_t> sliding_window_ranges(std::int64_t seq_total, std::int64_t window, bool causal);

/// Keys visible only within their query's document (causally when `causal`), the documents given
/// by `count` cumulative boundaries from 0: one entry per non-empty document.
std::vector<rfa_mask_range_t> document_ranges(const std::int64_t* bounds, std::int64_t count, bool causal);
/// The entries document_ranges makes (its non-empty documents), without making them (the same
/// checks and refusals).
std::int64_t document_count(const std::int64_t* bounds, std::int64_t count);

/// The first `prefix` tokens see each other both ways; every token sees the prefix and, causally,
/// the rest: two entries (one when prefix is 0).
std::vector<rfa_mask_range_t> prefix_lm_ranges(std::int64_t seq_total, std::int64_t prefix);

/// The most entries a builder makes (56 bytes each, 3.5 GiB in all): a mask that needs more is
/// refused before anything is built.
constexpr std::int64_t kMaxBuiltRangeEntries = std::int64_t(1) << 26;

/// Blocks of `block` tokens see their own block and every earlier one: one entry per block.
std::vector<rfa_mask_range_t> block_causal_ranges(std::int64_t seq_total, std::int64_t block);
/// The entries block_causal_ranges makes, without making them (the same checks and refusals).
std::int64_t block_causal_count(std::int64_t seq_total, std::int64_t block);

/// Points of an nx x ny x nz row-major grid (x fastest) see the points within `radius` along
/// each axis: one band per pair of grid rows (fixed y, z) that see each other.
std::vector<rfa_mask_range_t> grid_neighbourhood_ranges(std::int64_t nx, std::int64_t ny, std::int64_t nz,
                                                        std::int64_t radius);
/// The entries grid_neighbourhood_ranges makes, in closed form (the same checks and refusals).
std::int64_t grid_neighbourhood_count(std::int64_t nx, std::int64_t ny, std::int64_t nz, std::int64_t radius);

}  // namespace rfa
