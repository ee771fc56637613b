// SPDX-License-Identifier: BSD-3-Clause
// The kernels' tile count (kernels/tile_work.hpp) against the kernels' own rule applied to every
// tile pair (classify_tile), for every layout, mask, window and documents, blocks of
// every pair of ranks, and tile sizes that do and do not divide the rows; and the query and
// key rows of the tiles computed; the count without the cut tiles' visible scores
// (computed_scores) against the same.
#include <gtest/gtest.h>
#include <limits>

#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/mask_ranges.hpp"
#include "documented_mask.hpp"
#include "kernels/query_tiles.hpp"
#include "kernels/tile_work.hpp"
#include "layout/chunk_placement.hpp"
#include "layout/sequence_layout.hpp"
#include "random_mask_ranges.hpp"

namespace rfa::kernels {
namespace {

// The longest window a caller may give (options.window has no upper bound): it hides nothing,
// and the counts' arithmetic on it must not overflow.
constexpr std::int64_t kLongestWindow = std::numeric_limits<std::int64_t>::max();

// `ranges`: the list behind rule.ranges, whose pairs are tested by the documented rule.
// Query tiles cut short at a segment boundary in the current test: each test with tiles that may
// be cut checks that some were.
int cut_tiles = 0;

// The query tiles are query_tiles()' (the kernels place theirs by it; tested on its own in
// query_tiles_test.cpp).
TileWork tile_by_tile(const MaskRule& rule, const PositionMap& q, const PositionMap& k, TileShape tile,
                      const std::vector<rfa_mask_range_t>* ranges = nullptr) {
  TileWork w;
  const std::int64_t Lq = q.length(), Lk = k.length();
  const int tk = tile.k;
  std::int64_t first_key = Lk, end_key = 0;  // the key rows from the first to the last tile computed
  std::vector<RowSpan> tiles;
  query_tiles(rule, q, k, tile, tiles);
  // A cut tile's visible pairs by the documented rules, not by MaskRule's code.
  const std::vector<std::int64_t> docs(rule.doc_bounds, rule.doc_bounds + (rule.doc_bounds ? rule.doc_bound_count : 0));
  const rfa_test::DocumentedMask visible{rule.causal, rule.window, &docs, rule.ranges.on ? ranges : nullptr};
  for (const RowSpan& t : tiles) cut_tiles += t.end - t.begin < tile.q && t.end < Lq ? 1 : 0;
  for (const auto [r0, r1] : tiles) {
    bool computes = false;
    for (std::int64_t c0 = 0; c0 < Lk; c0 += tk) {
      const std::int64_t c1 = std::min(Lk, c0 + tk);
      const double area = double((r1 - r0) * (c1 - c0));
      const TileVisibility kind = classify_tile(rule, q, r0, r1, k, c0, c1);
      if (kind != TileVisibility::hidden) {
        computes = true;
        first_key = std::min(first_key, c0);
        end_key = std::max(end_key, c1);
      }
      switch (kind) {
        case TileVisibility::full: w.full += area; break;
        case TileVisibility::partial:
          w.partial += area;
          for (std::int64_t i = r0; i < r1; ++i)
            for (std::int64_t j = c0; j < c1; ++j)
              if (visible(q(i), k(j))) w.partial_visible += 1;
          break;
        case TileVisibility::hidden: break;
      }
    }
    if (computes) w.rows += double(r1 - r0);
  }
  w.keys = double(std::max<std::int64_t>(0, end_key - first_key));
  return w;
}

void expect_same_work(const TileWork& got, const TileWork& want, const std::string& where) {
  ASSERT_EQ(got.full, want.full) << where;
  ASSERT_EQ(got.partial, want.partial) << where;
  ASSERT_EQ(got.partial_visible, want.partial_visible) << where;
  ASSERT_EQ(got.rows, want.rows) << where;
  ASSERT_EQ(got.keys, want.keys) << where;
}

TEST(TileWork, MatchesTheKernelsRuleTileByTile) {
  const std::int64_t S = 720;
  const std::vector<std::int64_t> no_docs, docs = {0, 100, 100, 333, 610, 720};
  int cases = 0;
  cut_tiles = 0;
  for (rfa_layout_t layout : {RFA_LAYOUT_CONTIGUOUS, RFA_LAYOUT_ZIGZAG, RFA_LAYOUT_STRIPE})
    for (int P : {1, 2, 3, 4})
      for (bool causal : {false, true})
        for (std::int64_t window :
             {std::int64_t(0), std::int64_t(1), std::int64_t(50), std::int64_t(200), kLongestWindow})
          for (const std::vector<std::int64_t>* d : {&no_docs, &docs})
            for (const TileShape tile : {TileShape{16, 8, false}, {7, 13, false}, {192, 96, true}, {48, 8, true}}) {
              MaskRule rule{causal, window, d->empty() ? nullptr : d->data(), std::int64_t(d->size()), {}};
              for (int me = 0; me < P; ++me)
                for (int owner = 0; owner < P; ++owner) {
                  const PositionMap q = layout::positions(layout, S, P, me), k = layout::positions(layout, S, P, owner);
                  const TileWork want = tile_by_tile(rule, q, k, tile), got = count_tile_work(rule, q, k, tile);
                  std::ostringstream where;
                  where << layout::layout_name(layout) << " P=" << P << " " << me << "<-" << owner << " causal "
                        << causal << " window " << window << " docs " << d->size() << " tiles " << tile.q << "x"
                        << tile.k << (tile.cut_at_segments ? " cut" : "");
                  ASSERT_NO_FATAL_FAILURE(expect_same_work(got, want, where.str()));
                  ASSERT_EQ(computed_scores(rule, q, k, tile), want.computed()) << where.str();
                  ++cases;
                }
            }
  EXPECT_EQ(cases, 3 * 30 * 2 * 5 * 2 * 4);
  EXPECT_GT(cut_tiles, 0);
}

// Maps no layout pairs (segments of different strides, a query segment starting after its
// keys, offsets that are no multiple of the stride): the count row by row where strides
// differ and in closed form where they agree, against the rule tile by tile.
TEST(TileWork, MixedMapsMatchTheKernelsRuleTileByTile) {
  const std::vector<std::int64_t> no_docs, docs = {0, 7, 7, 90, 181, 300};
  const std::vector<std::pair<PositionMap, PositionMap>> maps = {
      {PositionMap::one({1, 3, 90}), PositionMap::contiguous(0, 270)},
      {PositionMap::contiguous(40, 200), PositionMap::one({2, 5, 50})},
      {PositionMap::two({100, 2, 40}, {5, 2, 30}), PositionMap::two({1, 2, 60}, {150, 1, 60})},
      {PositionMap::one({150, 4, 30}), PositionMap::one({3, 4, 70})},
  };
  int cases = 0;
  cut_tiles = 0;
  for (const auto& [q, k] : maps)
    for (bool causal : {false, true})
      for (std::int64_t window : {std::int64_t(0), std::int64_t(1), std::int64_t(9), std::int64_t(64), kLongestWindow})
        for (const std::vector<std::int64_t>* d : {&no_docs, &docs})
          for (const TileShape tile : {TileShape{16, 8, false}, {48, 13, true}}) {
            MaskRule rule{causal, window, d->empty() ? nullptr : d->data(), std::int64_t(d->size()), {}};
            const TileWork want = tile_by_tile(rule, q, k, tile), got = count_tile_work(rule, q, k, tile);
            std::ostringstream where;
            where << "maps " << cases / 32 << " causal " << causal << " window " << window << " docs " << d->size()
                  << " tiles " << tile.q << "x" << tile.k << (tile.cut_at_segments ? " cut" : "");
            ASSERT_EQ(got.full, want.full) << where.str();
            ASSERT_EQ(got.partial, want.partial) << where.str();
            ASSERT_EQ(got.partial_visible, want.partial_visible) << where.str();
            ASSERT_EQ(computed_scores(rule, q, k, tile), want.computed()) << where.str();
            ++cases;
          }
  EXPECT_EQ(cases, 4 * 2 * 5 * 2 * 2);
}

// Masks given as ranges (random lists whose bounds fall on chunk edges and next to them), alone
// and with the causal mask, a window or documents: the same counts as the rule tile by tile.
TEST(TileWork, MaskRangesMatchTheKernelsRuleTileByTile) {
  const std::int64_t S = 240;
  const std::vector<std::int64_t> no_docs, docs = {0, 50, 50, 131, 240}, edges = {0, 30, 60, 80, 120, 160, 180, 240};
  std::mt19937_64 rng(5);
  int cases = 0;
  cut_tiles = 0;
  for (int trial = 0; trial < 24; ++trial) {
    const auto list = rfa_test::random_mask_ranges(rng, S, 1 + trial % 7, edges);
    const MaskRanges ranges(list.data(), std::int64_t(list.size()), S, "ranges");
    const bool causal = trial % 3 == 2;
    const std::int64_t window = trial % 4 == 1 ? 37 : 0;
    const std::vector<std::int64_t>& d = trial % 5 == 4 ? docs : no_docs;
    const MaskRule rule{causal, window, d.empty() ? nullptr : d.data(), std::int64_t(d.size()), ranges.index()};
    for (rfa_layout_t layout : {RFA_LAYOUT_CONTIGUOUS, RFA_LAYOUT_ZIGZAG, RFA_LAYOUT_STRIPE})
      for (int P : {1, 3, 4})
        for (const TileShape tile : {TileShape{16, 8, false}, {48, 8, true}})
          for (int me = 0; me < P; ++me)
            for (int owner = 0; owner < P; ++owner) {
              const PositionMap q = layout::positions(layout, S, P, me), k = layout::positions(layout, S, P, owner);
              const TileWork want = tile_by_tile(rule, q, k, tile, &list), got = count_tile_work(rule, q, k, tile);
              std::ostringstream where;
              where << "trial " << trial << " " << layout::layout_name(layout) << " P=" << P << " " << me << "<-"
                    << owner << " tiles " << tile.q << "x" << tile.k << (tile.cut_at_segments ? " cut" : "");
              ASSERT_EQ(got.full, want.full) << where.str();
              ASSERT_EQ(got.partial, want.partial) << where.str();
              ASSERT_EQ(got.partial_visible, want.partial_visible) << where.str();
              ASSERT_EQ(got.rows, want.rows) << where.str();
              ASSERT_EQ(got.keys, want.keys) << where.str();
              ASSERT_EQ(computed_scores(rule, q, k, tile), want.computed()) << where.str();
              ++cases;
            }
  }
  EXPECT_EQ(cases, 24 * 3 * 2 * (1 + 9 + 16));
  EXPECT_GT(cut_tiles, 0);
}

// A balanced placement's maps (eight chunks a rank, scattered, adjacent ones merged) whose
// chunks are as long as the tiles' rows or keys, or one shorter or longer: tile edges on the
// chunks' edges and one row away, under the causal mask, a window with documents, and ranges.
TEST(TileWork, BalancedChunksOnTheTilesEdgesMatchTheRuleTileByTile) {
  const auto rank_chunks =
      std::vector<std::vector<std::int64_t>>{{0, 3, 4, 9, 12, 13, 14, 22}, {1, 2, 6, 10, 11, 17, 20, 23}};
  int cases = 0;
  cut_tiles = 0;
  for (const TileShape tile : {TileShape{12, 6, false}, {6, 12, false}, {48, 24, true}, {72, 48, true}})
    for (std::int64_t n : {std::int64_t(tile.k) - 1, std::int64_t(tile.k), std::int64_t(tile.k) + 1,
                           std::int64_t(tile.q) - 1, std::int64_t(tile.q), std::int64_t(tile.q) + 1}) {
      const std::int64_t S = 24 * n;
      const std::vector<std::int64_t> docs = {0, 3 * n, 3 * n + 1, 11 * n - 1, S};
      std::mt19937_64 rng{std::uint64_t(n)};
      std::vector<std::int64_t> edges;
      for (std::int64_t c = 0; c <= 24; ++c) edges.push_back(c * n);
      const auto list = rfa_test::random_mask_ranges(rng, S, 6, edges);
      const MaskRanges ranges(list.data(), std::int64_t(list.size()), S, "ranges");
      const MaskRule rules[] = {{true, 0, nullptr, 0, {}},
                                {true, n + 1, docs.data(), std::int64_t(docs.size()), {}},
                                {false, 0, nullptr, 0, ranges.index()}};
      for (const MaskRule& rule : rules)
        for (const auto& mine : rank_chunks)
          for (const auto& theirs : rank_chunks) {
            const PositionMap q = layout::chunk_positions(mine, n), k = layout::chunk_positions(theirs, n);
            const TileWork want = tile_by_tile(rule, q, k, tile, &list), got = count_tile_work(rule, q, k, tile);
            std::ostringstream where;
            where << "tiles " << tile.q << "x" << tile.k << (tile.cut_at_segments ? " cut" : "") << " chunk " << n
                  << " rule " << (&rule - rules) << " ranks " << (&mine - rank_chunks.data()) << "<-"
                  << (&theirs - rank_chunks.data());
            ASSERT_NO_FATAL_FAILURE(expect_same_work(got, want, where.str()));
            ASSERT_EQ(computed_scores(rule, q, k, tile), want.computed()) << where.str();
            ++cases;
          }
    }
  EXPECT_EQ(cases, 4 * 6 * 3 * 4);
  EXPECT_GT(cut_tiles, 0);
}

TEST(TileWork, WholeSequenceCountsAreExact) {
  const PositionMap all = PositionMap::contiguous(0, 1000);
  const TileWork none = count_tile_work(MaskRule{}, all, all, TileShape{64, 64});
  EXPECT_EQ(none.full, 1e6);
  EXPECT_EQ(none.partial, 0);
  EXPECT_EQ(none.rows, 1000);
  EXPECT_EQ(none.keys, 1000);
  // Causal, tiles of 1: exactly the visible scores, all full.
  const TileWork causal = count_tile_work(MaskRule{true, 0, nullptr, 0, {}}, all, all, TileShape{1, 1});
  EXPECT_EQ(causal.full, 1000.0 * 1001.0 / 2.0);
  EXPECT_EQ(causal.partial, 0);
}

// A block of 2^40 rows in two chunks, zigzag-like: its query tiles are runs, not a list (one of
// 2^40 / 192 tiles would take 90 GB), and the count samples them in bounded time.
TEST(TileWork, ABlockOfAnyLengthIsCountedWithoutListingItsTiles) {
  const std::int64_t half = std::int64_t(1) << 39;
  const PositionMap q = PositionMap::two({half - 100, 1, half}, {3 * half, 1, half});
  const PositionMap k = PositionMap::contiguous(0, 4 * half);
  const MaskRule causal{true, 0, nullptr, 0, {}};
  QueryTileRuns runs;
  query_tile_runs(causal, q, k, kHostForwardTile, runs);
  ASSERT_GE(runs.size(), 2 * half / kHostForwardTile.q);
  EXPECT_EQ(runs[0].begin, 0);
  EXPECT_EQ(runs[runs.size() - 1].end, 2 * half);
  for (const std::int64_t i : {std::int64_t(1), runs.size() / 2, runs.size() - 1})
    EXPECT_EQ(runs[i].begin, runs[i - 1].end) << "tile " << i;
  const TileWork w = count_tile_work(causal, q, k, kHostForwardTile);
  EXPECT_EQ(w.rows, double(2 * half));
  // Every query sees about its position's keys: between the first and the last query's.
  EXPECT_GT(w.full + w.partial, double(2 * half) * double(half - 100));
  EXPECT_LT(w.partial_visible, w.partial + 1.0);
}

}  // namespace
}  // namespace rfa::kernels
