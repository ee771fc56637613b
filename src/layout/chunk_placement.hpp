// SPDX-License-Identifier: BSD-3-Clause
// The balanced layout's solver (docs/masks.md, "Balanced placement"): the sequence cut into
// kBalancedChunksPerRank * P equal chunks, each assigned to a rank by its work, so that every
// rank holds as many tokens and nearly as much work as every other. The work comes from the
// caller (engine/rank_positions.hpp counts a mask's visible scores): this file knows nothing
// of masks.
#pragma once

#include <cstdint>
#include <vector>

#include "core/positions.hpp"

namespace rfa::layout {

/// Chunks per rank of the balanced layout: S must be a multiple of this times P. Eight keep the
/// families of perf/masks within 3% of even work at P = 2..64, four leave skewed documents 36%
/// over (perf/RESULTS.md, "2026-11-29 (noon) — masks given as ranges on the fixed layouts:
/// balance, tiles and bytes (counts)").
inline constexpr int kBalancedChunksPerRank = 8;
static_assert(kBalancedChunksPerRank <= PositionMap::kMaxSegments, "a rank's chunks must fit one position map");

/// Which chunks each rank holds.
struct ChunkPlacement {
  std::int64_t chunk_length = 0;
  std::vector<std::vector<std::int64_t>> chunks;  ///< per rank, its chunk indices ascending

  /// Rank `rank`'s rows: its chunks in position order, adjacent chunks as one segment.
  PositionMap positions(int rank) const;
};

/// The rows of `chunks` (indices ascending, each `chunk_length` tokens) in position order,
/// adjacent chunks as one segment. Throws rfa::Error beyond PositionMap::kMaxSegments segments.
PositionMap chunk_positions(const std::vector<std::int64_t>& chunks, std::int64_t chunk_length);

/// Assigns chunk c (of chunk_work.size() = ranks * chunks_per_rank equal chunks of a sequence of
/// `seq_len` tokens) to ranks: largest work first, each to the rank with the least work so far
/// among those holding fewer than chunks_per_rank chunks (ties: equal work in chunk order, the
/// lowest rank). No communication: every rank that passes the same work computes the same
/// placement. Throws rfa::Error unless the counts divide and the work is finite and not negative.
ChunkPlacement place_chunks_by_work(const std::vector<double>& chunk_work, std::int64_t seq_len, int ranks);

/// Work of several kinds per chunk (each kind weighed against its own mean over the ranks).
using ChunkMeasures = std::vector<std::vector<double>>;  ///< [kind][chunk]

/// place_chunks_by_work() for several kinds of work at once: largest first (a chunk's size: its
/// largest share of a kind's mean per rank), each to the rank with room whose largest share
/// after it is smallest (ties: the smaller sum of shares, then the lowest rank). Deterministic;
/// throws rfa::Error as place_chunks_by_work() does, or when the kinds' chunk counts differ.
ChunkPlacement place_chunks_by_measures(const ChunkMeasures& chunk_work, std::int64_t seq_len, int ranks);

}  // namespace rfa::layout
