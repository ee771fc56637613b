// SPDX-License-Identifier: BSD-3-Clause
// The key tiles of a forward call that some query may see: the host forward kernels copy K and V
// into their own forms (fp32 head by head, bf16 in the products' pair forms) for these tiles
// only, so a mask that hides most of a long block costs neither the copy nor its memory.
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/flash_attention.hpp"
#include "kernels/tile_visibility.hpp"

namespace rfa {
namespace kernels {

/// Key tiles of `tile_cols` keys in a call's K.
inline std::int64_t key_tile_count(const AttentionParams& p, int tile_cols) {
  return (p.seq_k + tile_cols - 1) / tile_cols;
}

/// Calls seen(kt, slot) for each key tile of `tile_cols` keys, in order, that some query may see
/// (slot: 0, 1, ... in that order); returns how many. A tile is seen when the mask does not hide
/// it from every query of some segment of the query positions (classify_tile over a segment's
/// rows; a zigzag rank's rows are two distant segments), for some batch entry's rule. A tile
/// without a slot is hidden from every query: a query tile straddling two segments may call it
/// partial (its range spans both) and still sees nothing in it. O(key tiles x segments), so the
/// engines' memory formulas can ask for the count of any shape cheaply.
template <class Seen>
int for_each_seen_key_tile(const AttentionParams& p, int tile_cols, Seen&& seen) {
  int count = 0;
  const std::int64_t tiles = key_tile_count(p, tile_cols);
  for (std::int64_t kt = 0; kt < tiles; ++kt) {
    const std::int64_t c0 = kt * tile_cols, c1 = std::min<std::int64_t>(c0 + tile_cols, p.seq_k);
    bool any = false;
    for (std::int64_t e = 0; e < p.rule_entries() && !any; ++e) {  // per-sequence documents: any entry's
      const MaskRule rule = p.rule(e);
      any = !rule.any();
      std::int64_t row = 0;  // the query rows of each segment, then any rows after the last one
      for (int a = 0; a <= p.q_pos.count && row < p.seq_q && !any; ++a) {
        const std::int64_t end = a < p.q_pos.count ? std::min(p.seq_q, row + p.q_pos.seg[a].length) : p.seq_q;
        any = end > row && classify_tile(rule, p.q_pos, row, end, p.k_pos, c0, c1) != TileVisibility::hidden;
        row = end;
      }
    }
    if (any) seen(int(kt), count++);
  }
  return count;
}

/// The two tables of a call's seen key tiles in one int array of 2 * key_tile_count() entries:
/// slot[kt] is tile kt's slot (-1: not seen), slot[key_tile_count() + s] the tile in slot s.
/// Returns the number of slots.
inline int fill_key_tile_slots(const AttentionParams& p, int tile_cols, int* slot) {
  const std::int64_t tiles = key_tile_count(p, tile_cols);
  for (std::int64_t kt = 0; kt < tiles; ++kt) slot[kt] = -1;
  return for_each_seen_key_tile(p, tile_cols, [&](int kt, int s) {
    slot[kt] = s;
    slot[tiles + s] = kt;
  });
}

/// Bytes of the two tables fill_key_tile_slots() writes.
inline std::int64_t key_tile_slots_bytes(const AttentionParams& p, int tile_cols) {
  return 2 * std::int64_t(sizeof(int)) * key_tile_count(p, tile_cols);
}

/// The slot tables in `buffer` (grown to key_tile_slots_bytes() under `label` when smaller),
/// filled; returns the tables and the number of slots. The host forward kernels fill them before
/// anything else, so that the count sizes the K and V copies they then grow.
struct KeyTileSlots {
  const int* table;
  int slots;
};
inline KeyTileSlots fill_key_tile_slots_in(const AttentionParams& p, int tile_cols, const char* label,
                                           Kokkos::View<unsigned char*, HostSpace>& buffer) {
  grow_workspace({{label, key_tile_slots_bytes(p, tile_cols), &buffer}});
  int* const table = reinterpret_cast<int*>(buffer.data());
  return {table, fill_key_tile_slots(p, tile_cols, table)};
}

}  // namespace kernels
}  // namespace rfa
