// SPDX-License-Identifier: BSD-3-Clause
#include "mask_balance.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <numeric>
#include <utility>

#include "core/mask_range_builders.hpp"
#include "core/mask_ranges.hpp"
#include "document_balance.hpp"
#include "engine/attention_config.hpp"
#include "engine/needed_kv_plan.hpp"
#include "engine/rank_positions.hpp"
#include "kernels/tile_work.hpp"
#include "layout/chunk_placement.hpp"
#include "layout/sequence_layout.hpp"

namespace rfa {
namespace perf {

std::vector<MaskFamily> mask_families(std::int64_t seq, std::mt19937_64& rng) {
  std::vector<MaskFamily> families;
  families.push_back({"causal", causal_ranges(seq)});
  const std::vector<std::int64_t> bounds = long_tailed_documents(seq, double(seq) / 64, 1.2, rng);
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

PositionMap as_map(const std::vector<Segment>& segments) {
  PositionMap m;
  for (const Segment& g : segments) {
    Segment* last = m.count > 0 ? &m.seg[m.count - 1] : nullptr;
    if (last != nullptr && g.stride == 1 && last->stride == 1 && last->start + last->length == g.start) {
      last->length += g.length;
      continue;
    }
    require(m.count < PositionMap::kMaxSegments, "a placement gives a rank more than ", PositionMap::kMaxSegments,
            " separate segments");
    m.seg[m.count++] = g;
  }
  return m;
}

std::string family_stem(const std::string& family) {
  std::string stem;
  for (char ch : family) stem += ch == ' ' ? '-' : char(std::tolower(static_cast<unsigned char>(ch)));
  return stem;
}

namespace {

double max_over_mean(const std::vector<double>& v) {
  const double mean = std::accumulate(v.begin(), v.end(), 0.0) / double(v.size());
  return mean > 0 ? *std::max_element(v.begin(), v.end()) / mean : 1.0;
}

}  // namespace

Placement layout_placement(rfa_layout_t layout, std::int64_t seq, int ranks) {
  Placement p(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) {
    const PositionMap m = layout::positions(layout, seq, ranks, r);
    for (int s = 0; s < m.count; ++s) p[std::size_t(r)].push_back(m.seg[s]);
  }
  return p;
}

MaskPairs::MaskPairs(const std::vector<rfa_mask_range_t>& list, std::int64_t tokens)
    : seq(tokens), ranges(std::make_shared<const MaskRanges>(list.data(), std::int64_t(list.size()), tokens, "mask")) {
  const MaskRangeIndex index = ranges->index();
  std::vector<std::pair<std::int64_t, std::int64_t>> row;
  begin.reserve(static_cast<std::size_t>(seq) + 1);
  for (std::int64_t q = 0; q < seq; ++q) {
    begin.push_back(std::int64_t(spans.size()));
    visible_key_intervals(index, q, 0, seq - 1, row);
    spans.insert(spans.end(), row.begin(), row.end());
  }
  begin.push_back(std::int64_t(spans.size()));
}

double MaskPairs::pairs(std::int64_t q) const {
  double n = 0;
  for (std::int64_t s = begin[std::size_t(q)]; s < begin[std::size_t(q) + 1]; ++s)
    n += double(spans[std::size_t(s)].second - spans[std::size_t(s)].first + 1);
  return n;
}

Placement balanced_placement(const MaskPairs& mask, int ranks, bool refined, engine::RefinementReport* report) {
  engine::AttentionConfig c;
  c.layout = RFA_LAYOUT_BALANCED;
  c.mask = RFA_MASK_RANGES;
  c.seq_total = mask.seq;
  c.ranges = mask.ranges;
  const layout::ChunkPlacement solved =
      refined ? engine::solve_balanced_placement(c, ranks, report)
              : layout::place_chunks_by_work(engine::balanced_chunk_work(c, ranks), mask.seq, ranks);
  Placement p(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r)
    for (const std::int64_t chunk : solved.chunks[std::size_t(r)])
      p[std::size_t(r)].push_back({chunk * solved.chunk_length, 1, solved.chunk_length});
  return p;
}

PlacementCounts placement_counts(const MaskPairs& mask, const Placement& placement, const rfa_layout_t* layout) {
  const int ranks = int(placement.size());
  const std::int64_t seq = mask.seq;
  engine::AttentionConfig c;
  c.layout = layout != nullptr ? *layout : RFA_LAYOUT_CONTIGUOUS;
  c.mask = RFA_MASK_RANGES;
  c.seq_total = seq;
  c.ranges = mask.ranges;
  PlacementCounts counts;
  if (layout != nullptr) counts.engine_ring_steps = int(engine::ring_steps_with_work(c, ranks).size());

  // Which rank holds each position; then per rank its queries' visible pairs and, marked on a
  // difference array, every key they see and so the ranks whose blocks it needs.
  std::vector<int> owner(static_cast<std::size_t>(seq), -1);
  std::int64_t local = 0;
  for (int r = 0; r < ranks; ++r) {
    std::int64_t rows = 0;
    for (const Segment& g : placement[std::size_t(r)])
      for (std::int64_t i = 0; i < g.length; ++i, ++rows) owner[std::size_t(g.start + i * g.stride)] = r;
    local = std::max(local, rows);
  }
  std::vector<double> work(static_cast<std::size_t>(ranks), 0.0);
  std::vector<char> step_needed(static_cast<std::size_t>(ranks), 0);
  step_needed[0] = 1;
  std::vector<std::int64_t> marks(static_cast<std::size_t>(seq) + 1);
  for (int r = 0; r < ranks; ++r) {
    std::fill(marks.begin(), marks.end(), 0);
    for (const Segment& g : placement[std::size_t(r)]) {
      for (std::int64_t i = 0; i < g.length; ++i) {
        const std::size_t q = std::size_t(g.start + i * g.stride);
        for (std::int64_t s = mask.begin[q]; s < mask.begin[q + 1]; ++s) {
          const auto [a, b] = mask.spans[std::size_t(s)];
          work[std::size_t(r)] += double(b - a + 1);
          ++marks[std::size_t(a)];
          --marks[std::size_t(b) + 1];
        }
      }
    }
    std::int64_t seen = 0, cover = 0;
    for (std::int64_t k = 0; k < seq; ++k) {
      cover += marks[std::size_t(k)];
      const int o = owner[std::size_t(k)];
      if (cover > 0 && o != r) {
        ++seen;
        step_needed[std::size_t((r - o + ranks) % ranks)] = 1;
      }
    }
    counts.seen_rows = std::max(counts.seen_rows, seen);
    if (layout != nullptr) {
      const std::vector<engine::KeySpan> spans = engine::seen_keys(c, ranks, r);
      std::int64_t needed = 0;
      for (int o = 0; o < ranks; ++o)
        if (o != r) needed += engine::needed_transfer(c, ranks, spans, o).rows;
      counts.needed_rows = std::max(counts.needed_rows, needed);
      counts.needed_over_seen = std::max(counts.needed_over_seen, seen > 0     ? double(needed) / double(seen)
                                                                  : needed > 0 ? 1e30
                                                                               : 1.0);
    }
  }
  counts.ring_steps = int(std::count(step_needed.begin(), step_needed.end(), 1));
  counts.ring_rows = std::int64_t(counts.ring_steps - 1) * local;
  counts.work_max_over_mean = max_over_mean(work);

  // The tiles each rank's kernels compute: its queries against every block it meets on the ring.
  const kernels::MaskRule rule = engine::mask_rule(c, 0);
  std::vector<double> tiles(static_cast<std::size_t>(ranks), 0.0), backward(tiles);
  for (int r = 0; r < ranks; ++r) {
    const PositionMap mine = as_map(placement[std::size_t(r)]);
    for (int o = 0; o < ranks; ++o) {
      const PositionMap theirs = as_map(placement[std::size_t(o)]);
      tiles[std::size_t(r)] += kernels::computed_scores(rule, mine, theirs, kernels::kHostForwardTile);
      backward[std::size_t(r)] += kernels::computed_scores(rule, mine, theirs, kernels::kHostBackwardTile);
    }
  }
  counts.tiles_max_over_mean = max_over_mean(tiles);
  counts.backward_tiles_max_over_mean = max_over_mean(backward);
  const double visible = std::accumulate(work.begin(), work.end(), 0.0);
  counts.computed_over_visible = visible > 0 ? std::accumulate(tiles.begin(), tiles.end(), 0.0) / visible : 1.0;
  return counts;
}

}  // namespace perf
}  // namespace rfa
