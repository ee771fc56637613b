// SPDX-License-Identifier: BSD-3-Clause
#include "layout/sequence_layout.hpp"

#include <string>

#include "core/error.hpp"
#include "layout/chunk_placement.hpp"

namespace rfa::layout {

namespace {
// How many equal chunks the layout cuts the sequence into: S must be a multiple of it.
std::int64_t chunk_count(rfa_layout_t layout, int ranks) {
  if (layout == RFA_LAYOUT_BALANCED) return kBalancedChunksPerRank * std::int64_t(ranks);
  return layout == RFA_LAYOUT_ZIGZAG ? 2 * std::int64_t(ranks) : std::int64_t(ranks);
}
}  // namespace

const char* layout_name(rfa_layout_t layout) {
  switch (layout) {
    case RFA_LAYOUT_CONTIGUOUS: return "contiguous";
    case RFA_LAYOUT_ZIGZAG: return "zigzag";
    case RFA_LAYOUT_STRIPE: return "stripe";
    case RFA_LAYOUT_BALANCED: return "balanced";
  }
  return "unknown layout";
}

void validate_shape(rfa_layout_t layout, std::int64_t seq_len, int ranks) {
  require(layout == RFA_LAYOUT_CONTIGUOUS || layout == RFA_LAYOUT_ZIGZAG || layout == RFA_LAYOUT_STRIPE ||
              layout == RFA_LAYOUT_BALANCED,
          "unknown sequence layout value ", int(layout),
          " (expected RFA_LAYOUT_CONTIGUOUS, RFA_LAYOUT_ZIGZAG, RFA_LAYOUT_STRIPE or RFA_LAYOUT_BALANCED)");
  require(seq_len >= 1, "the global sequence length must be at least 1, got ", seq_len);
  require(ranks >= 1, "the number of ranks in the ring must be at least 1, got ", ranks);
  const std::int64_t chunks = chunk_count(layout, ranks);
  if (seq_len % chunks != 0) {
    // The next multiple of `chunks`, unless S is so close to 2^63 that it has none.
    std::int64_t padded = 0;
    const bool can_pad = !__builtin_mul_overflow(seq_len / chunks + 1, chunks, &padded);
    const char* divisor = layout == RFA_LAYOUT_ZIGZAG ? "2 * P" : layout == RFA_LAYOUT_BALANCED ? "8 * P" : "P";
    const char* why = layout == RFA_LAYOUT_ZIGZAG ? "it cuts the sequence into 2P equal chunks and gives each rank two"
                      : layout == RFA_LAYOUT_BALANCED
                          ? "it cuts the sequence into 8P equal chunks and gives each rank eight, chosen by their work"
                      : layout == RFA_LAYOUT_STRIPE
                          ? "every rank holds every P-th token and all ranks hold equally many"
                          : "it cuts the sequence into P equal chunks";
    fail(RFA_ERROR_INVALID_ARGUMENT, "the ", layout_name(layout),
         " layout needs the global sequence length S to be a multiple of ", divisor, " = ", chunks, " (", why,
         "), but S = ", seq_len, " and P = ", ranks, ". ",
         can_pad ? "Pad the end of the sequence to S = " + std::to_string(padded) +
                       " (under the causal mask tokens appended at the end change no earlier token's output; "
                       "under any mask, padding in a document of its own (options.doc_boundaries) does not; "
                       "drop the padded rows and give them a zero dout), or choose"
                 : std::string("Choose"),
         " a rank count P that ",
         layout == RFA_LAYOUT_ZIGZAG     ? "makes 2 * P divide S"
         : layout == RFA_LAYOUT_BALANCED ? "makes 8 * P divide S"
                                         : "divides S");
  }
}

void validate(rfa_layout_t layout, std::int64_t seq_len, int ranks, int position) {
  validate_shape(layout, seq_len, ranks);
  require(position >= 0 && position < ranks, "ring position ", position, " is outside 0..", ranks - 1, " (P = ", ranks,
          ")");
}

std::int64_t local_length(rfa_layout_t layout, std::int64_t seq_len, int ranks) {
  validate_shape(layout, seq_len, ranks);
  return seq_len / ranks;
}

PositionMap positions(rfa_layout_t layout, std::int64_t seq_len, int ranks, int position) {
  validate(layout, seq_len, ranks, position);
  const std::int64_t r = position;
  const std::int64_t p = ranks;
  switch (layout) {
    case RFA_LAYOUT_CONTIGUOUS: return PositionMap::contiguous(r * (seq_len / p), seq_len / p);
    case RFA_LAYOUT_ZIGZAG: {
      const std::int64_t chunk = seq_len / (2 * p);
      return PositionMap::two(Segment{r * chunk, 1, chunk}, Segment{(2 * p - 1 - r) * chunk, 1, chunk});
    }
    case RFA_LAYOUT_STRIPE: return PositionMap::one(Segment{r, p, seq_len / p});
    case RFA_LAYOUT_BALANCED:
      fail(RFA_ERROR_INVALID_ARGUMENT,
           "the balanced layout's positions depend on the mask: ask a context (rfa_context_get_local_positions)");
  }
  fail(RFA_ERROR_INTERNAL, "unreachable: layout validated but not handled");
}

}  // namespace rfa::layout
