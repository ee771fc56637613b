// SPDX-License-Identifier: BSD-3-Clause
// The kernels' tile counts (kernels/tile_work.hpp), remembered across the blocks of one
// prediction: the model asks for P x P blocks per pass, and on the fixed layouts most of them
// repeat a block P ranks away.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "core/positions.hpp"
#include "kernels/tile_visibility.hpp"
#include "kernels/tile_work.hpp"

namespace rfa {
namespace model {

/// kernels::count_tile_work(), remembered. Under a rule that tests only differences of
/// positions (the causal mask and the window: no documents, no ranges), a block's work is that
/// of its two maps moved together so that their first position is 0, which every pair of ranks
/// at the same distance shares (the ring's blocks on a contiguous layout: P distinct blocks of
/// P x P). Other rules are counted each time.
class TileWorkMemo {
 public:
  kernels::TileWork count(const kernels::MaskRule& rule, const PositionMap& q, const PositionMap& k,
                          kernels::TileShape tile);
  /// Blocks counted, and of those answered from memory.
  std::int64_t asked() const { return asked_; }
  std::int64_t remembered() const { return remembered_; }

 private:
  std::map<std::vector<std::int64_t>, kernels::TileWork> known_;
  std::int64_t asked_ = 0, remembered_ = 0;
};

}  // namespace model
}  // namespace rfa
