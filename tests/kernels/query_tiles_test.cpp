// SPDX-License-Identifier: BSD-3-Clause
// Where the forward's query tiles start (kernels/query_tiles.hpp): tiles that cover the rows in
// order, none longer than the tile and any shorter one ending at a segment boundary or the last
// row; a tile rows from row 0 without cut_at_segments or without a mask; chunks in different
// documents tiled apart, chunks that see the same keys tiled together; and every end as the
// documented rule gives it, recounted here from classify_tile.
#include <gtest/gtest.h>

#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/mask_ranges.hpp"
#include "kernels/query_tiles.hpp"
#include "layout/chunk_placement.hpp"
#include "random_mask_ranges.hpp"

namespace rfa::kernels {
namespace {

std::vector<RowSpan> tiles_of(const MaskRule& rule, const PositionMap& q, const PositionMap& k, TileShape tile) {
  std::vector<RowSpan> out;
  query_tiles(rule, q, k, tile, out);
  return out;
}

std::vector<std::pair<std::int64_t, std::int64_t>> spans(const std::vector<RowSpan>& tiles) {
  std::vector<std::pair<std::int64_t, std::int64_t>> out;
  for (const RowSpan& t : tiles) out.emplace_back(t.begin, t.end);
  return out;
}

/// The documented rule, step by step: the key columns of the key tiles each side does not find
/// hidden (classify_tile, as the kernels skip tiles), rows rounded up to 24.
std::vector<RowSpan> by_the_rule(const MaskRule& rule, const PositionMap& q, const PositionMap& k, TileShape tile) {
  const std::int64_t rows = q.length(), keys = k.length();
  std::vector<std::int64_t> bounds;
  std::int64_t base = 0;
  for (int s = 0; s + 1 < q.count; ++s) bounds.push_back(base += q.seg[s].length);
  auto pad = [](std::int64_t n) { return double((n + 23) / 24 * 24); };
  auto seen = [&](std::int64_t r0, std::int64_t r1) {
    double cols = 0;
    for (std::int64_t c0 = 0; c0 < keys; c0 += tile.k) {
      const std::int64_t c1 = std::min(keys, c0 + tile.k);
      if (classify_tile(rule, q, r0, r1, k, c0, c1) != TileVisibility::hidden) cols += double(c1 - c0);
    }
    return cols;
  };
  std::vector<RowSpan> out;
  for (std::int64_t r0 = 0; r0 < rows;) {
    std::int64_t end = std::min(rows, r0 + tile.q);
    for (const std::int64_t b : bounds) {
      if (b <= r0 || b >= end) continue;
      if (tile.cut_at_segments && rule.any() &&
          pad(b - r0) * seen(r0, b) + pad(end - b) * seen(b, end) < pad(end - r0) * seen(r0, end))
        end = b;
      break;  // only the first boundary inside the tile is weighed
    }
    out.push_back({r0, end});
    r0 = end;
  }
  return out;
}

TEST(QueryTiles, ChunksInOtherDocumentsAreTiledApartAndChunksSeeingTheSameKeysTogether) {
  const TileShape cut{192, 96, true}, fixed{192, 96, false};
  // Two 128-row chunks in two documents against the whole sequence: each sees only its own.
  const std::vector<std::int64_t> docs = {0, 500, 2000};
  const MaskRule documents{false, 0, docs.data(), std::int64_t(docs.size()), {}};
  const PositionMap apart = PositionMap::two({0, 1, 128}, {1000, 1, 128}), all = PositionMap::contiguous(0, 2000);
  using Spans = std::vector<std::pair<std::int64_t, std::int64_t>>;
  EXPECT_EQ(spans(tiles_of(documents, apart, all, cut)), (Spans{{0, 128}, {128, 256}}));
  EXPECT_EQ(spans(tiles_of(documents, apart, all, fixed)), (Spans{{0, 192}, {192, 256}}));
  // Causal, every key before both chunks: both see every key tile, and cutting would only pad.
  const MaskRule causal{true, 0, nullptr, 0, {}};
  const PositionMap late = PositionMap::two({1000, 1, 128}, {1500, 1, 128}), early = PositionMap::contiguous(0, 960);
  EXPECT_EQ(spans(tiles_of(causal, late, early, cut)), (Spans{{0, 192}, {192, 256}}));
  // No mask: every query sees every key, so no tile is cut.
  EXPECT_EQ(spans(tiles_of(MaskRule{}, apart, all, cut)), (Spans{{0, 192}, {192, 256}}));
  // One segment: nothing to cut at.
  EXPECT_EQ(spans(tiles_of(documents, all, all, cut)).size(), std::size_t((2000 + 191) / 192));
}

// Balanced placements' maps (up to eight chunks a rank) with chunks shorter and longer than the
// tile, on the rows' rounding (24) and one either side, under the causal mask, a window, documents and ranges.
TEST(QueryTiles, CoverTheRowsAndEndWhereTheRuleSays) {
  std::mt19937_64 rng(11);
  int cut_tiles = 0, cases = 0;
  for (const TileShape tile : {TileShape{96, 24, true}, {48, 96, true}, {96, 24, false}})
    for (const std::int64_t n : {23, 24, 25, 47, 48, 49, 70}) {
      const std::int64_t S = 24 * n;
      const std::vector<std::int64_t> docs = {0, 3 * n, 3 * n + 1, 11 * n - 1, 17 * n, S};
      std::vector<std::int64_t> edges;
      for (std::int64_t c = 0; c <= 24; ++c) edges.push_back(c * n);
      const auto list = rfa_test::random_mask_ranges(rng, S, 6, edges);
      const MaskRanges ranges(list.data(), std::int64_t(list.size()), S, "ranges");
      const MaskRule rules[] = {{true, 0, nullptr, 0, {}},
                                {false, 2 * n, nullptr, 0, {}},
                                {true, 0, docs.data(), std::int64_t(docs.size()), {}},
                                {false, 0, nullptr, 0, ranges.index()}};
      const std::vector<std::vector<std::int64_t>> ranks = {
          {0, 3, 4, 9, 12, 13, 14, 22}, {1, 2, 6, 10, 11, 17, 20, 23}, {5, 7, 8, 15, 16, 18, 19, 21}};
      for (const MaskRule& rule : rules)
        for (const auto& mine : ranks)
          for (const auto& theirs : ranks) {
            const PositionMap q = layout::chunk_positions(mine, n), k = layout::chunk_positions(theirs, n);
            const std::vector<RowSpan> got = tiles_of(rule, q, k, tile);
            std::ostringstream where;
            where << "tile " << tile.q << "x" << tile.k << (tile.cut_at_segments ? " cut" : "") << " chunk " << n
                  << " rule " << (&rule - rules) << " ranks " << (&mine - ranks.data()) << "<-"
                  << (&theirs - ranks.data());
            std::vector<std::int64_t> bounds;
            std::int64_t base = 0;
            for (int s = 0; s < q.count; ++s) bounds.push_back(base += q.seg[s].length);
            std::int64_t next = 0;
            for (const RowSpan& t : got) {
              ASSERT_EQ(t.begin, next) << where.str();
              ASSERT_GT(t.end, t.begin) << where.str();
              ASSERT_LE(t.end - t.begin, tile.q) << where.str();
              if (t.end - t.begin < tile.q && t.end < q.length()) {
                ASSERT_TRUE(tile.cut_at_segments) << where.str();
                ASSERT_NE(std::find(bounds.begin(), bounds.end(), t.end), bounds.end()) << where.str();
                ++cut_tiles;
              }
              next = t.end;
            }
            ASSERT_EQ(next, q.length()) << where.str();
            ASSERT_EQ(spans(got), spans(by_the_rule(rule, q, k, tile))) << where.str();
            ++cases;
          }
    }
  EXPECT_EQ(cases, 3 * 7 * 4 * 9);
  EXPECT_GT(cut_tiles, 50);  // the rule cuts often here; a cut that never happens tests nothing
}

}  // namespace
}  // namespace rfa::kernels
