// SPDX-License-Identifier: BSD-3-Clause
#include "mask_balance.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

#include "core/mask_range_builders.hpp"
#include "core/mask_ranges.hpp"
#include "engine/attention_config.hpp"
#include "layout/sequence_layout.hpp"
#include "model/tile_work.hpp"

namespace rfa {
namespace perf {

std::vector<MaskFamily> mask_families(std::int64_t seq, std::mt19937_64& rng) {
  std::vector<MaskFamily> families;
  families.push_back({"causal", causal_ranges(seq)});
  std::lognormal_distribution<double> length(std::log(double(seq) / 64), 1.2);
  std::vector<std::int64_t> bounds = {0};
  while (bounds.back() < seq)
    bounds.push_back(std::min(seq, bounds.back() + std::max<std::int64_t>(1, std::llround(length(rng)))));
  families.push_back({"skewed documents", document_ranges(bounds.data(), std::int64_t(bounds.size()), true)});
  families.push_back({"prefix-LM", prefix_lm_ranges(seq, seq / 4)});
  families.push_back({"block-causal", block_causal_ranges(seq, seq / 64)});
  families.push_back({"2-D neighbourhood", grid_neighbourhood_ranges(256, seq / 256, 1, 8)});
  std::vector<rfa_mask_range_t> sparse;
  std::uniform_int_distribution<std::int64_t> start(0, seq - 1), side(1, seq / 16);
  for (std::int64_t n = 0; n < seq / 256; ++n) {
    const std::int64_t q = start(rng), k = start(rng);
    sparse.push_back({q, std::min(seq, q + side(rng)), k, std::min(seq, k + side(rng)), 0, 0, RFA_RANGE_FULL});
  }
  families.push_back({"random sparse", sparse});
  return families;
}

PlacementCounts placement_counts(const std::vector<rfa_mask_range_t>& ranges, std::int64_t seq, rfa_layout_t layout,
                                 int ranks) {
  engine::AttentionConfig c;
  c.layout = layout;
  c.mask = RFA_MASK_RANGES;
  c.seq_total = seq;
  c.ranges = std::make_shared<const MaskRanges>(ranges.data(), std::int64_t(ranges.size()), seq, "mask");
  const MaskRangeIndex index = c.ranges->index();
  PlacementCounts counts;
  counts.ring_steps = int(engine::ring_steps_with_work(c, ranks).size());

  // Which rank holds each position, then per rank: its queries' visible pairs and, marked on a
  // difference array, every key they see.
  std::vector<PositionMap> maps;
  std::vector<int> owner(static_cast<std::size_t>(seq));
  for (int r = 0; r < ranks; ++r) {
    maps.push_back(layout::positions(layout, seq, ranks, r));
    for (std::int64_t i = 0; i < maps.back().length(); ++i) owner[std::size_t(maps.back()(i))] = r;
  }
  std::vector<double> work(static_cast<std::size_t>(ranks), 0.0);
  std::vector<std::pair<std::int64_t, std::int64_t>> spans;
  std::vector<std::int64_t> marks(static_cast<std::size_t>(seq) + 1);
  for (int r = 0; r < ranks; ++r) {
    std::fill(marks.begin(), marks.end(), 0);
    const PositionMap& m = maps[std::size_t(r)];
    for (std::int64_t i = 0; i < m.length(); ++i) {
      visible_key_intervals(index, m(i), 0, seq - 1, spans);
      for (const auto& [a, b] : spans) {
        work[std::size_t(r)] += double(b - a + 1);
        ++marks[std::size_t(a)];
        --marks[std::size_t(b) + 1];
      }
    }
    std::int64_t seen = 0, cover = 0;
    for (std::int64_t k = 0; k < seq; ++k) {
      cover += marks[std::size_t(k)];
      if (cover > 0 && owner[std::size_t(k)] != r) ++seen;
    }
    counts.seen_rows = std::max(counts.seen_rows, seen);
  }
  counts.ring_rows = std::int64_t(counts.ring_steps - 1) * layout::local_length(layout, seq, ranks);
  auto max_over_mean = [&](const std::vector<double>& v) {
    const double mean = std::accumulate(v.begin(), v.end(), 0.0) / double(v.size());
    return mean > 0 ? *std::max_element(v.begin(), v.end()) / mean : 1.0;
  };
  counts.work_max_over_mean = max_over_mean(work);

  // The tiles each rank's kernels compute: its queries against every block it meets on the ring.
  const kernels::MaskRule rule = engine::mask_rule(c, 0);
  std::vector<double> tiles(static_cast<std::size_t>(ranks), 0.0);
  for (int r = 0; r < ranks; ++r)
    for (int owner = 0; owner < ranks; ++owner)
      tiles[std::size_t(r)] +=
          model::count_tile_work(rule, maps[std::size_t(r)], maps[std::size_t(owner)], 192, 96).computed();
  counts.tiles_max_over_mean = max_over_mean(tiles);
  const double visible = std::accumulate(work.begin(), work.end(), 0.0);
  counts.computed_over_visible = visible > 0 ? std::accumulate(tiles.begin(), tiles.end(), 0.0) / visible : 1.0;
  return counts;
}

}  // namespace perf
}  // namespace rfa
