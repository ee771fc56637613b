// SPDX-License-Identifier: BSD-3-Clause
// The host forward kernels' teams: one per (batch, head, query tile), the query tiles of each
// batch entry placed by query_tiles() under that entry's rule (per-sequence documents give each
// entry its own), shared by the fp32 kernel (flash_forward.cpp) and the bf16 one
// (flash_forward_bf16.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/flash_attention.hpp"
#include "kernels/query_tiles.hpp"

namespace rfa {
namespace kernels {

class ForwardTilePlan {
 public:
  /// The query tiles of a call's every batch entry, for tiles of `tile` (its query rows and
  /// whether they may end at segment boundaries; its key rows are those query_tiles() weighs).
  ForwardTilePlan(const AttentionParams& p, TileShape tile);

  /// Teams in the league: batch x heads x each entry's query tiles.
  std::int64_t items() const { return batch_first_item_.back(); }

  /// What team `item` computes: batch b, head h, local query rows `rows`.
  struct Item {
    int b = 0, h = 0;
    RowSpan rows;
  };
  Item item(std::int64_t item) const;

 private:
  std::vector<RowSpan> spans_;                  // entry 0's tiles, then entry 1's, ...
  std::vector<std::int64_t> entry_first_;       // entry e's tiles: spans_[entry_first_[e] .. entry_first_[e + 1])
  std::vector<std::int64_t> batch_first_item_;  // batch b's items: [batch_first_item_[b], ... [b + 1])
  std::int64_t heads_ = 1;
  bool per_batch_ = false;  // each batch entry under its own rule
};

}  // namespace kernels
}  // namespace rfa
