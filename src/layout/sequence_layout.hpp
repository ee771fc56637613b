// SPDX-License-Identifier: BSD-3-Clause
// Which global token positions each ring position holds (docs/architecture.md §4). Every layout yields
// an rfa::PositionMap of a few affine segments, which is all the kernels and the engine ever
// see of it:
//   contiguous: chunk r of P equal chunks            -> {r*S/P, 1, S/P}
//   zigzag:     chunks r and 2P-1-r of 2P chunks     -> {r*c, 1, c}, {(2P-1-r)*c, 1, c}, c = S/(2P)
//   stripe:     tokens t with t mod P == r           -> {r, P, S/P}
//   balanced:   8 of 8P chunks, chosen by the mask's work (layout/chunk_placement.hpp); its
//               positions depend on the mask, so the engine computes them
//               (engine/rank_positions.hpp), not positions() below
// Every rank holds the same number of tokens, local_length().
#pragma once

#include <cstdint>

#include "core/positions.hpp"
#include "rfa/rfa.h"

namespace rfa::layout {

/// "contiguous", "zigzag", "stripe", "balanced" (or "unknown layout").
const char* layout_name(rfa_layout_t layout);

/// Throws rfa::Error(RFA_ERROR_INVALID_ARGUMENT) unless the layout is known, S >= 1, P >= 1,
/// 0 <= position < P, and S is divisible as the layout needs (S % P == 0 for contiguous and
/// stripe, S % (2P) == 0 for zigzag, S % (8P) == 0 for balanced). The message says which
/// numbers fail and how to fix it.
void validate(rfa_layout_t layout, std::int64_t seq_len, int ranks, int position);

/// Throws as validate() for everything but the position.
void validate_shape(rfa_layout_t layout, std::int64_t seq_len, int ranks);

/// Tokens each rank holds: S / P (validated).
std::int64_t local_length(rfa_layout_t layout, std::int64_t seq_len, int ranks);

/// The global positions held by ring position `position` (validated), local row order, for the
/// fixed layouts; throws RFA_ERROR_INVALID_ARGUMENT for the balanced layout, whose positions
/// depend on the mask.
PositionMap positions(rfa_layout_t layout, std::int64_t seq_len, int ranks, int position);

}  // namespace rfa::layout
