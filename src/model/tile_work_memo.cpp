// SPDX-License-Identifier: BSD-3-Clause
#include "model/tile_work_memo.hpp"

#include <algorithm>
#include <utility>

namespace rfa {
namespace model {

kernels::TileWork TileWorkMemo::count(const kernels::MaskRule& rule, const PositionMap& q, const PositionMap& k,
                                      kernels::TileShape tile) {
  ++asked_;
  if (rule.documents() || rule.ranges.on) return kernels::count_tile_work(rule, q, k, tile);
  std::int64_t origin = q.count > 0 ? q.seg[0].start : 0;
  for (const PositionMap* m : {&q, &k})
    for (int s = 0; s < m->count; ++s) origin = std::min(origin, m->seg[s].start);
  std::vector<std::int64_t> key = {rule.causal ? 1 : 0, rule.window, tile.q, tile.k, tile.cut_at_segments ? 1 : 0};
  for (const PositionMap* m : {&q, &k}) {
    key.push_back(m->count);
    for (int s = 0; s < m->count; ++s)
      key.insert(key.end(), {m->seg[s].start - origin, m->seg[s].stride, m->seg[s].length});
  }
  const auto found = known_.find(key);
  if (found != known_.end()) {
    ++remembered_;
    return found->second;
  }
  const kernels::TileWork w = kernels::count_tile_work(rule, q, k, tile);
  known_.emplace(std::move(key), w);
  return w;
}

}  // namespace model
}  // namespace rfa
