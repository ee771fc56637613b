// SPDX-License-Identifier: BSD-3-Clause
// The balanced layout: the solver (layout/chunk_placement.hpp) on known work, and the engine's
// placement (engine/rank_positions.hpp) of every mask family of the benchmark (perf/masks) at
// P = 2..64: a permutation of the sequence in whole chunks, the same from every copy of the
// config, and visible work per rank within 5% of the mean (counted query by query here),
// including a sequence long enough that the solver estimates the chunks' work.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/mask_range_builders.hpp"
#include "core/mask_ranges.hpp"
#include "engine/attention_config.hpp"
#include "engine/rank_positions.hpp"
#include "layout/chunk_placement.hpp"
#include "layout/sequence_layout.hpp"
#include "mask_families.hpp"
#include "positions_and_pairs.hpp"

namespace rfa::engine {
namespace {

TEST(ChunkPlacement, LargestFirstToTheLeastLoadedRankWithRoom) {
  // Loads after each step: 8 -> r0; 7 -> r1; 6 -> r1 (7 < 8); 5 -> r0 (8 < 13); 4 -> r0 (13 = 13,
  // the lower rank); 3 -> r1 (13 < 17); 2 -> r1 (16 < 17), which is then full; 1 -> r0.
  const layout::ChunkPlacement p = layout::place_chunks_by_work({8, 7, 6, 5, 4, 3, 2, 1}, 80, 2);
  EXPECT_EQ(p.chunk_length, 10);
  EXPECT_EQ(p.chunks[0], (std::vector<std::int64_t>{0, 3, 4, 7}));
  EXPECT_EQ(p.chunks[1], (std::vector<std::int64_t>{1, 2, 5, 6}));
  // Adjacent chunks are one segment: rank 0 holds [0, 10), [30, 50), [70, 80).
  const PositionMap m0 = p.positions(0), m1 = p.positions(1);
  ASSERT_EQ(m0.count, 3);
  EXPECT_EQ(m0.seg[1].start, 30);
  EXPECT_EQ(m0.seg[1].length, 20);
  ASSERT_EQ(m1.count, 2);
  EXPECT_EQ(m1.seg[0].start, 10);
  EXPECT_EQ(m1.seg[1].start, 50);
  EXPECT_EQ(m1.length(), 40);
}

TEST(ChunkPlacement, EqualWorkDealsChunksInTurn) {
  const layout::ChunkPlacement p = layout::place_chunks_by_work(std::vector<double>(12, 1.0), 24, 3);
  for (int r = 0; r < 3; ++r) EXPECT_EQ(p.chunks[std::size_t(r)], (std::vector<std::int64_t>{r, r + 3, r + 6, r + 9}));
}

// Several kinds of work: with one kind the placement by work itself; with a second kind heavy
// where the first alone puts one rank's chunks, every rank within a tenth of even in both.
TEST(ChunkPlacement, SeveralKindsOfWorkAtOnce) {
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> work(0.0, 10.0);
  std::vector<double> one(32);
  for (double& w : one) w = work(rng);
  EXPECT_EQ(layout::place_chunks_by_measures({one}, 320, 4).chunks, layout::place_chunks_by_work(one, 320, 4).chunks);

  // The second kind heavy exactly on the chunks the first kind alone gives rank 0.
  layout::ChunkMeasures two = {one, std::vector<double>(32, 1.0)};
  const layout::ChunkPlacement by_first = layout::place_chunks_by_work(one, 320, 4);
  for (const std::int64_t c : by_first.chunks[0]) two[1][std::size_t(c)] = 10.0;
  auto largest_share = [](const layout::ChunkPlacement& p, const std::vector<double>& w) {
    std::vector<double> load(p.chunks.size(), 0.0);
    for (std::size_t r = 0; r < p.chunks.size(); ++r)
      for (const std::int64_t c : p.chunks[r]) load[r] += w[std::size_t(c)];
    const double mean = std::accumulate(load.begin(), load.end(), 0.0) / double(load.size());
    return *std::max_element(load.begin(), load.end()) / mean;
  };
  const layout::ChunkPlacement both = layout::place_chunks_by_measures(two, 320, 4);
  for (const std::vector<std::int64_t>& mine : both.chunks) EXPECT_EQ(mine.size(), 8u);
  EXPECT_LE(largest_share(both, two[0]), 1.1);
  EXPECT_LE(largest_share(both, two[1]), 1.1);
  EXPECT_GT(largest_share(by_first, two[1]), 1.1)
      << "the first kind alone evens the second too: the case no longer tests several kinds";

  EXPECT_THROW(layout::place_chunks_by_measures({}, 320, 4), Error);
  EXPECT_THROW(layout::place_chunks_by_measures({one, std::vector<double>(31, 1.0)}, 320, 4), Error);
  EXPECT_THROW(layout::place_chunks_by_measures({std::vector<double>(7, 1.0)}, 70, 2), Error);
}

TEST(ChunkPlacement, RefusesCountsThatDoNotDivideAndBadWork) {
  EXPECT_THROW(layout::place_chunks_by_work(std::vector<double>(7, 1.0), 70, 2), Error);
  EXPECT_THROW(layout::place_chunks_by_work(std::vector<double>(8, 1.0), 84, 2), Error);
  EXPECT_THROW(layout::place_chunks_by_work({1, 2, -1, 3}, 8, 2), Error);
  EXPECT_THROW(layout::place_chunks_by_work({1, 2, std::nan(""), 3}, 8, 2), Error);
}

/// A balanced config of `seq` tokens under `mask` (ranges when `ranges` is given).
AttentionConfig balanced_config(std::int64_t seq, rfa_mask_t mask, const std::vector<rfa_mask_range_t>* ranges) {
  AttentionConfig c;
  c.layout = RFA_LAYOUT_BALANCED;
  c.mask = mask;
  c.seq_total = seq;
  if (ranges != nullptr)
    c.ranges = std::make_shared<const MaskRanges>(ranges->data(), std::int64_t(ranges->size()), seq, "ranges");
  return c;
}

/// Every query's visible keys counted one by one, and the busiest rank's work over the mean.
double work_max_over_mean(const AttentionConfig& c, int P) {
  const kernels::MaskRule rule = mask_rule(c, 0);
  std::vector<std::pair<std::int64_t, std::int64_t>> row;
  auto seen = [&](std::int64_t q) {
    std::int64_t lo = 0, hi = c.seq_total - 1;
    if (rule.causal) hi = q;
    if (rule.window > 0) lo = std::max<std::int64_t>(0, q - rule.window + 1);
    if (rule.documents()) {
      const std::int64_t d = rule.document_of(q);
      lo = std::max(lo, rule.doc_bounds[d]);
      hi = std::min(hi, rule.doc_bounds[d + 1] - 1);
    }
    if (lo > hi) return 0.0;
    if (!rule.ranges.on) return double(hi - lo + 1);
    visible_key_intervals(rule.ranges, q, lo, hi, row);
    double n = 0;
    for (const auto& [a, b] : row) n += double(b - a + 1);
    return n;
  };
  std::vector<double> work;
  for (int r = 0; r < P; ++r) {
    const PositionMap m = rank_positions(c, P, r);
    double w = 0;
    for (std::int64_t i = 0; i < m.length(); ++i) w += seen(m(i));
    work.push_back(w);
  }
  const double mean = std::accumulate(work.begin(), work.end(), 0.0) / P;
  return mean > 0 ? *std::max_element(work.begin(), work.end()) / mean : 1.0;
}

/// The placement is a permutation of whole chunks, each rank's in position order, and what a
/// copy of the config computes; with `fresh_solve`, also a config with the same mask and a
/// cache of its own, which solves the placement again (as every rank does).
void expect_permutation_of_chunks(const AttentionConfig& c, int P, bool fresh_solve) {
  const std::int64_t S = c.seq_total, chunk = S / (8 * P);
  std::vector<char> held(static_cast<std::size_t>(S), 0);
  const AttentionConfig copy = c;
  AttentionConfig fresh = c;
  fresh.placements = new_placement_cache();
  for (int r = 0; r < P; ++r) {
    const PositionMap m = rank_positions(c, P, r);
    ASSERT_EQ(m.length(), S / P);
    ASSERT_LE(m.count, 8);
    const std::vector<std::int64_t> rows = rows_of(m);
    EXPECT_TRUE(std::is_sorted(rows.begin(), rows.end()));
    for (std::size_t i = 0; i < rows.size(); i += std::size_t(chunk)) ASSERT_EQ(rows[i] % chunk, 0);
    for (std::int64_t t : rows) {
      ASSERT_EQ(held[std::size_t(t)], 0) << "position " << t << " held twice";
      held[std::size_t(t)] = 1;
    }
    EXPECT_EQ(rows_of(rank_positions(copy, P, r)), rows);
    if (fresh_solve) {
      EXPECT_EQ(rows_of(rank_positions(fresh, P, r)), rows);
    }
  }
}

class BalancedPlacement : public ::testing::TestWithParam<int> {};

TEST_P(BalancedPlacement, EveryFamilyWithinFivePercentOfEvenWork) {
  const int P = GetParam();
  // About 16384 tokens: a multiple of the 8P chunks and of the neighbourhood's 256-wide rows.
  const std::int64_t unit = std::lcm(std::int64_t(8) * P, std::int64_t(256)),
                     S = unit * std::max<std::int64_t>(1, 16384 / unit);
  // The second solve of a fresh cache at every ring size for the first family, and for all
  // up to 8 ranks: from 16 ranks on, a solve takes about a second here.
  bool first = true;
  for (const Family& f : families(S)) {
    SCOPED_TRACE(f.name);
    AttentionConfig c = balanced_config(S, f.mask, f.mask == RFA_MASK_RANGES ? &f.ranges : nullptr);
    c.window = f.window;
    c.doc_bounds = f.documents;
    expect_permutation_of_chunks(c, P, first || P <= 8);
    first = false;
    EXPECT_LE(work_max_over_mean(c, P), 1.05);
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, BalancedPlacement, ::testing::Values(2, 3, 4, 5, 8, 16, 32, 64));

// Chunks of 2^16 tokens: the solver estimates their work from 2^14 queries each.
TEST(BalancedPlacementEstimated, LongSequenceStaysEven) {
  const std::int64_t S = std::int64_t(1) << 22;
  for (const Family& f : families(S)) {
    if (f.name != "causal" && f.name != "causal_documents" && f.name != "prefix_lm") continue;
    SCOPED_TRACE(f.name);
    AttentionConfig c = balanced_config(S, f.mask, f.mask == RFA_MASK_RANGES ? &f.ranges : nullptr);
    c.doc_bounds = f.documents;
    EXPECT_LE(work_max_over_mean(c, 8), 1.05);
  }
}

// docs/masks.md's example: S = 64, P = 2, causal within documents [0, 8) and [8, 64).
TEST(RankPositions, TheDocumentedExample) {
  AttentionConfig c = balanced_config(64, RFA_MASK_CAUSAL, nullptr);
  c.doc_bounds = {0, 8, 64};
  EXPECT_EQ(balanced_chunk_work(c, 2),
            (std::vector<double>{10, 26, 10, 26, 42, 58, 74, 90, 106, 122, 138, 154, 170, 186, 202, 218}));
  std::vector<std::int64_t> rank0;
  for (std::int64_t t = 0; t < 64; ++t)
    if (t < 8 || (t >= 16 && t < 20) || (t >= 28 && t < 36) || (t >= 44 && t < 52) || t >= 60) rank0.push_back(t);
  EXPECT_EQ(rows_of(rank_positions(c, 2, 0)), rank0);
}

// The balanced layout's ring steps (found chunk by chunk) include every step at which some
// query pair by pair sees the block: windows around a chunk edge, documents, random ranges,
// with and without the causal mask, P = 2..5.
TEST(RankPositions, BalancedStepsIncludeEveryStepWithAVisiblePair) {
  for (int P : {2, 3, 4, 5}) {
    const std::int64_t S = 8 * P * 6, len = 6;
    std::mt19937_64 rng{std::uint64_t(P)};
    std::vector<std::vector<rfa_mask_range_t>> lists(3);
    for (auto& list : lists) {
      std::uniform_int_distribution<std::int64_t> at(0, S - 1), side(1, S / 8);
      for (int n = 0; n < 3; ++n) {
        const std::int64_t q = at(rng), k = at(rng);
        list.push_back({q, std::min(S, q + side(rng)), k, std::min(S, k + side(rng)), 0, 0, RFA_RANGE_FULL});
      }
    }
    for (int variant = 0; variant < 9; ++variant) {
      SCOPED_TRACE(::testing::Message() << "P " << P << " variant " << variant);
      const std::vector<rfa_mask_range_t>* ranges = variant >= 6 ? &lists[std::size_t(variant - 6)] : nullptr;
      AttentionConfig c = balanced_config(S,
                                          ranges        ? RFA_MASK_RANGES
                                          : variant % 2 ? RFA_MASK_NONE
                                                        : RFA_MASK_CAUSAL,
                                          ranges);
      if (variant < 4) c.window = len * (variant / 2 + 1) + (variant % 2 ? 1 : -1);  // beside a chunk edge
      if (variant == 4 || variant == 5) c.doc_bounds = {0, len + 1, 3 * len, 3 * len, S - len, S};
      const kernels::MaskRule rule = mask_rule(c, 0);
      std::vector<std::vector<std::int64_t>> rows;
      for (int r = 0; r < P; ++r) rows.push_back(rows_of(rank_positions(c, P, r)));
      const std::vector<int> steps = ring_steps_with_work(c, P);
      for (int s = 0; s < P; ++s) {
        bool seen = s == 0;
        for (int r = 0; r < P && !seen; ++r)
          for (std::int64_t q : rows[std::size_t(r)])
            for (std::int64_t k : rows[std::size_t((r - s + P) % P)]) seen = seen || sees(rule, q, k);
        if (seen) {
          EXPECT_TRUE(std::count(steps.begin(), steps.end(), s) == 1) << "step " << s << " skipped";
        }
      }
    }
  }
}

TEST(RankPositions, FixedLayoutsAreTheLayoutsOwn) {
  AttentionConfig c = balanced_config(96, RFA_MASK_CAUSAL, nullptr);
  for (rfa_layout_t l : {RFA_LAYOUT_CONTIGUOUS, RFA_LAYOUT_ZIGZAG, RFA_LAYOUT_STRIPE}) {
    c.layout = l;
    for (int r = 0; r < 4; ++r) EXPECT_EQ(rows_of(rank_positions(c, 4, r)), rows_of(layout::positions(l, 96, 4, r)));
  }
}

// A config copied and given another mask shares its copies' cache but not their placement.
TEST(RankPositions, ACopyWithAnotherMaskGetsItsOwnPlacement) {
  const std::int64_t S = 64 * 16;
  AttentionConfig causal = balanced_config(S, RFA_MASK_CAUSAL, nullptr);
  const std::vector<std::int64_t> before = rows_of(rank_positions(causal, 4, 0));
  AttentionConfig full = causal;
  full.mask = RFA_MASK_NONE;  // equal work: chunks dealt in turn
  std::vector<std::int64_t> dealt;
  for (std::int64_t c = 0; c < 32; c += 4)
    for (std::int64_t t = 0; t < S / 32; ++t) dealt.push_back(c * (S / 32) + t);
  EXPECT_EQ(rows_of(rank_positions(full, 4, 0)), dealt);
  EXPECT_NE(before, dealt);
  EXPECT_EQ(rows_of(rank_positions(causal, 4, 0)), before);
  // A copy given a window, or documents, gets what a config of its own (an empty cache) gets,
  // not the causal placement found first.
  AttentionConfig windowed = causal, documents = causal;
  windowed.window = S / 8;
  documents.doc_bounds = {0, S / 16, S / 8, S};
  for (const AttentionConfig* copy : {&windowed, &documents}) {
    AttentionConfig own = *copy;
    own.placements = new_placement_cache();
    const std::vector<std::int64_t> expected = rows_of(rank_positions(own, 4, 0));
    EXPECT_NE(expected, before) << "this mask places chunks as the causal one does: the check shows nothing";
    EXPECT_EQ(rows_of(rank_positions(*copy, 4, 0)), expected) << (copy == &windowed ? "window" : "documents");
  }
}

TEST(RankPositions, BalancedRefusesAPositionOutsideTheRingAndAnIndivisibleSequence) {
  const AttentionConfig c = balanced_config(64, RFA_MASK_CAUSAL, nullptr);
  EXPECT_THROW(rank_positions(c, 4, 4), Error);
  EXPECT_THROW(rank_positions(c, 3, 0), Error);  // 64 is not a multiple of 24
  EXPECT_THROW(layout::positions(RFA_LAYOUT_BALANCED, 64, 4, 0), Error);
}

}  // namespace
}  // namespace rfa::engine
