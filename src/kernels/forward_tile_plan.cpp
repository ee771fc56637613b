// SPDX-License-Identifier: BSD-3-Clause
#include "kernels/forward_tile_plan.hpp"

#include <algorithm>

namespace rfa {
namespace kernels {

ForwardTilePlan::ForwardTilePlan(const AttentionParams& p, TileShape tile)
    : heads_(p.heads), per_batch_(p.rule_entries() > 1) {
  // Maps that do not cover the call's rows and keys exactly (the last segment running on) get
  // tiles every tile.q rows: the rule weighs the maps' rows.
  if (p.q_pos.length() != p.seq_q || p.k_pos.length() != p.seq_k) tile.cut_at_segments = false;
  std::vector<RowSpan> tiles;
  entry_first_.push_back(0);
  for (std::int64_t e = 0; e < p.rule_entries(); ++e) {
    if (tile.cut_at_segments) {
      query_tiles(p.rule(e), p.q_pos, p.k_pos, tile, tiles);
    } else {
      tiles.clear();
      for (std::int64_t r0 = 0; r0 < p.seq_q; r0 += tile.q) tiles.push_back({r0, std::min(p.seq_q, r0 + tile.q)});
    }
    spans_.insert(spans_.end(), tiles.begin(), tiles.end());
    entry_first_.push_back(std::int64_t(spans_.size()));
  }
  batch_first_item_.push_back(0);
  for (std::int64_t b = 0; b < p.batch; ++b) {
    const std::int64_t e = per_batch_ ? b : 0;
    batch_first_item_.push_back(batch_first_item_.back() + heads_ * (entry_first_[e + 1] - entry_first_[e]));
  }
}

ForwardTilePlan::Item ForwardTilePlan::item(std::int64_t item) const {
  Item it;
  it.b =
      int(std::upper_bound(batch_first_item_.begin(), batch_first_item_.end(), item) - batch_first_item_.begin() - 1);
  const std::size_t e = per_batch_ ? std::size_t(it.b) : 0;
  const std::int64_t local = item - batch_first_item_[std::size_t(it.b)];
  const std::int64_t n = entry_first_[e + 1] - entry_first_[e];
  it.h = int(local / n);
  it.rows = spans_[std::size_t(entry_first_[e] + local % n)];
  return it;
}

}  // namespace kernels
}  // namespace rfa
