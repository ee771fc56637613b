// SPDX-License-Identifier: BSD-3-Clause
// Packed documents: one sequence of S tokens holding several documents back to back, given by
// their cumulative boundaries b[0] = 0 <= b[1] <= ... <= b[n] = S (document d holds positions
// [b[d], b[d+1]); n + 1 values, as FlashAttention's cu_seqlens). Attention stays inside a
// document; the kernels test it through MaskRule (kernels/tile_visibility.hpp).
#pragma once

#include <cstdint>

namespace rfa {

/// Throws rfa::Error (RFA_ERROR_INVALID_ARGUMENT) naming `what` and saying what to change
/// unless `bounds` (`count` values; count 0: no documents, bounds may be null) start at 0, never
/// decrease and end at `seq_total` (seq_total < 0: the end is not checked). Empty documents
/// (equal neighbours) are allowed and hold no token.
void validate_document_bounds(const std::int64_t* bounds, std::int64_t count, std::int64_t seq_total, const char* what);

/// Per-sequence documents: `offsets` (`offset_count` values) cut `bounds` (`count` values) into
/// one list per batch entry, entry e's being bounds[offsets[e] .. offsets[e + 1]). Throws
/// rfa::Error (RFA_ERROR_INVALID_ARGUMENT) naming the field and the entry unless offset_count is
/// 0 (then `bounds` is one list for every entry, checked as validate_document_bounds does) or
/// batch + 1 offsets from 0 to `count` that never decrease, each entry's list holding 0 values
/// (one document) or a list validate_document_bounds accepts.
void validate_document_lists(const std::int64_t* bounds, std::int64_t count, const std::int64_t* offsets,
                             std::int64_t offset_count, std::int64_t batch, std::int64_t seq_total,
                             const char* bounds_name, const char* offsets_name);

/// A 64-bit FNV-1a hash of the `count` values at `bounds` (nullptr when count is 0), so that
/// ranks can agree on a whole list by one number.
std::int64_t document_bounds_hash(const std::int64_t* bounds, std::int64_t count);

}  // namespace rfa
