// SPDX-License-Identifier: BSD-3-Clause
// The host forward computes the query tiles query_tiles() places (kernels/forward_tile_plan.hpp),
// which the tile count and the performance model count: with one thread, its progress hook runs
// once per (query tile, key tile) it computes, which must be the rule's tiles' visible key
// tiles, on maps whose tiles are cut at the chunks' boundaries and with per-sequence documents
// that cut one entry's tiles and not another's.
#include <gtest/gtest.h>

#include <vector>

#include "kernels/flash_attention.hpp"
#include "kernels/query_tiles.hpp"

namespace rfa::kernels {
namespace {

void count_poll(void* context) { ++*static_cast<std::int64_t*>(context); }

/// A position map of these segments.
PositionMap chunks(std::initializer_list<Segment> segments) {
  PositionMap m;
  for (const Segment& s : segments) m.seg[m.count++] = s;
  return m;
}

/// (query tile, key tile) pairs the tiles computes: key tiles of 96 that classify_tile does not
/// find hidden for the tiles' rows.
std::int64_t tile_pairs(const MaskRule& rule, const PositionMap& q, const PositionMap& k, TileShape tile) {
  std::vector<RowSpan> tiles;
  query_tiles(rule, q, k, tile, tiles);
  std::int64_t n = 0;
  for (const auto [r0, r1] : tiles)
    for (std::int64_t c0 = 0; c0 < k.length(); c0 += tile.k)
      n += classify_tile(rule, q, r0, r1, k, c0, std::min(k.length(), c0 + tile.k)) != TileVisibility::hidden;
  return n;
}

TEST(ForwardTilePlan, TheForwardComputesTheTilesTheRulePlaces) {
  if (Kokkos::DefaultHostExecutionSpace().concurrency() != 1)
    GTEST_SKIP() << "the forward polls its progress hook on one thread only";
  const PositionMap q = chunks({{0, 1, 100}, {400, 1, 70}, {800, 1, 130}, {1200, 1, 90}});
  const PositionMap k = chunks({{100, 1, 150}, {470, 1, 200}, {1000, 1, 100}});
  // Entry 0: a document per chunk (its tiles cut); entry 1: one document (causal: not cut).
  const std::vector<std::int64_t> bounds = {0, 300, 700, 1100, 1400, 0, 1400}, offsets = {0, 5, 7};
  AttentionParams p = make_params(2, q.length(), k.length(), 1, 1, 32, RFA_MASK_CAUSAL);
  p.q_pos = q;
  p.k_pos = k;
  p.doc_bounds = bounds.data();
  p.doc_bound_count = std::int64_t(bounds.size());
  p.doc_offsets = offsets.data();
  std::int64_t want = 0, fixed = 0;
  for (std::int64_t e = 0; e < 2; ++e) {
    want += tile_pairs(p.rule(e), q, k, kHostForwardTile);
    fixed += tile_pairs(p.rule(e), q, k, {kHostForwardTile.q, kHostForwardTile.k, false});
  }
  ASSERT_LT(want, fixed) << "the cut tiles must compute fewer tiles here, or the test tells nothing";

  Tensor4<float> tq("q", 2, q.length(), 1, 32), tk("k", 2, k.length(), 1, 32), tv("v", 2, k.length(), 1, 32);
  Tensor4<float> out("out", 2, q.length(), 1, 32);
  Tensor3<float> lse("lse", 2, 1, q.length());
  std::int64_t polls = 0;
  flash_forward<float, float>(p, tq, tk, tv, out, lse, ProgressHook{count_poll, &polls});
  EXPECT_EQ(polls, want);
}

}  // namespace
}  // namespace rfa::kernels
