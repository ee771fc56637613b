// SPDX-License-Identifier: BSD-3-Clause
// Which K/V rows each rank's queries see, for the needed-only exchange
// (engine/needed_kv_attention.hpp, docs/strategies.md): the keys a receiver's queries see under
// the config's mask, cut into the rows each owner holds, and those rows grouped into the pieces
// one kernel call takes. A pure function of the config and the ring size, so every rank finds
// the same plan without communication.
#pragma once

#include <cstdint>
#include <vector>

#include "core/positions.hpp"
#include "engine/attention_config.hpp"

namespace rfa {
namespace engine {

/// Global key positions [first, last], inclusive.
struct KeySpan {
  std::int64_t first = 0, last = 0;
};

/// Local rows [begin, end) of a rank.
struct RowRun {
  std::int64_t begin = 0, end = 0;
};

/// Rows of one owner that one kernel call takes: owner-local runs in order, whose global
/// positions (`positions`, in the same order) form at most PositionMap::kMaxSegments segments.
struct NeededPiece {
  std::vector<RowRun> runs;
  PositionMap positions;
  std::int64_t rows = 0;
  std::int64_t first_row = 0;  ///< rows of the transfer's pieces before this one
};

/// What a receiver gets from one owner: the owner's rows its queries see, as runs (gaps of at
/// most a twentieth of the seen rows filled, so that a scattered set travels in fewer runs),
/// grouped into pieces. `seen_rows` counts the rows seen, `rows` those sent (>= seen_rows).
struct NeededTransfer {
  std::vector<RowRun> runs;
  std::vector<NeededPiece> pieces;
  std::int64_t seen_rows = 0;
  std::int64_t rows = 0;
};

/// Where each row of a transfer sits when its pieces are packed one after the other, each as
/// [batch][its rows][...] (how the exchange lays out K, V and their gradients): the owner's
/// local row, and its row in the packed buffer for batch entry 0; entry b's is `piece_rows`
/// further per b.
struct PackedRows {
  PackedRows() = default;
  PackedRows(const NeededTransfer& t, std::int64_t batch);
  std::vector<std::int64_t> local, packed, piece_rows;
  std::int64_t count() const { return std::int64_t(local.size()); }
};

/// The keys ring position `receiver` of `ranks` has queries that see, under the config's mask
/// (every batch entry's rule), as sorted disjoint spans that do not touch. Exact while the
/// receiver's rows times the batch entries with their own rule fit 2^22; beyond that groups of
/// consecutive rows are bounded together (a superset, never missing a seen key). Without
/// ranges each run of consecutive positions is bounded at once, which is exact: every query
/// then sees itself, so the keys of consecutive queries join.
std::vector<KeySpan> seen_keys(const AttentionConfig& c, int ranks, int receiver);

/// The rows of `owner` whose positions are in `seen` (seen_keys() of some receiver), in the
/// owner's local row order, as runs and pieces.
NeededTransfer needed_transfer(const AttentionConfig& c, int ranks, const std::vector<KeySpan>& seen, int owner);

/// One round of the exchange at distance s: ring position me receives from the rank s
/// positions upstream (`from`) the rows its queries see there, and sends the rank s positions
/// downstream (`to`) the rows of its own that that rank's queries see.
struct NeededRound {
  int distance = 0, from = 0, to = 0;
  NeededTransfer receive, send;
};

/// The rounds of ring position `me` of `ranks`: every distance s (ascending, 1 <= s < ranks) at
/// which some rank's queries see keys of the rank s positions upstream, so every rank runs the
/// same rounds (in some, this rank may move nothing).
std::vector<NeededRound> needed_rounds(const AttentionConfig& c, int ranks, int me);

}  // namespace engine
}  // namespace rfa
