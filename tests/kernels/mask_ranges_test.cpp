// SPDX-License-Identifier: BSD-3-Clause
// A mask given as ranges (core/mask_ranges.hpp) as the kernels see it, against the documented
// rule applied pair by pair (tests/common/random_mask_ranges.hpp): the index's pair test, the
// tile classification over every sub-range of small position maps (hidden never hides a
// visible pair and is exact on contiguous ranges; full never holds a hidden one), the per-score
// mask of a partial tile, whole blocks, the ranges together with the causal mask, a window and
// documents; and the list's checks.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/mask_ranges.hpp"
#include "core/positions.hpp"
#include "documented_mask.hpp"
#include "kernels/tile_visibility.hpp"
#include "random_mask_ranges.hpp"

namespace rfa {
namespace kernels {
namespace {

constexpr std::int64_t S = 20;

using rfa_test::small_position_maps;

TEST(MaskRanges, IndexAgreesWithTheDocumentedRuleOnEveryPair) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    const auto list = rfa_test::random_mask_ranges(rng, S, 1 + trial % 9, {0, 5, 10, 15, 20});
    const MaskRanges ranges(list.data(), std::int64_t(list.size()), S, "ranges");
    const MaskRangeIndex x = ranges.index();
    for (std::int64_t q = 0; q < S; ++q)
      for (std::int64_t k = 0; k < S; ++k)
        ASSERT_EQ(x.visible(q, k), rfa_test::ranges_let_through(list, q, k))
            << "trial " << trial << ": query " << q << ", key " << k;
  }
}

TEST(MaskRanges, TilesBlocksAndScoreMasksAgreeWithThePairs) {
  std::mt19937_64 rng(11);
  const std::vector<std::int64_t> no_docs, docs = {0, 4, 9, 9, 20};
  int tiles = 0, full = 0, hidden = 0;
  for (int trial = 0; trial < 120; ++trial) {
    const auto list = rfa_test::random_mask_ranges(rng, S, 1 + trial % 6, {0, 3, 6, 7, 12, 13, 15});
    const MaskRanges ranges(list.data(), std::int64_t(list.size()), S, "ranges");
    const bool causal = trial % 3 == 1;
    const std::int64_t window = trial % 4 == 2 ? 5 : 0;
    const std::vector<std::int64_t>& d = trial % 5 == 3 ? docs : no_docs;
    MaskRule rule{causal, window, d.empty() ? nullptr : d.data(), std::int64_t(d.size()), ranges.index()};
    const rfa_test::DocumentedMask visible{causal, window, &d, &list};
    for (const PositionMap& q : small_position_maps())
      for (const PositionMap& k : small_position_maps()) {
        for (std::int64_t r0 = 0; r0 < q.length(); ++r0)
          for (std::int64_t r1 = r0 + 1; r1 <= q.length(); ++r1)
            for (std::int64_t c0 = 0; c0 < k.length(); ++c0)
              for (std::int64_t c1 = c0 + 1; c1 <= k.length(); ++c1) {
                bool any = false, all = true;
                for (std::int64_t i = r0; i < r1; ++i)
                  for (std::int64_t j = c0; j < c1; ++j) {
                    const bool v = visible(q(i), k(j));
                    any = any || v;
                    all = all && v;
                  }
                const TileVisibility got = classify_tile(rule, q, r0, r1, k, c0, c1);
                ++tiles;
                full += got == TileVisibility::full;
                hidden += got == TileVisibility::hidden;
                ASSERT_FALSE(got == TileVisibility::hidden && any)
                    << "trial " << trial << ": a tile with a visible pair is hidden (queries " << q(r0) << ".., keys "
                    << k(c0) << "..)";
                ASSERT_FALSE(got == TileVisibility::full && !all)
                    << "trial " << trial << ": a tile with a hidden pair is full (queries " << q(r0) << ".., keys "
                    << k(c0) << "..)";
                // The ranges alone on contiguous rows: a tile no entry reaches is hidden, exactly.
                if (!causal && window == 0 && d.empty() && q.count == 1 && q.seg[0].stride == 1 && k.count == 1 &&
                    k.seg[0].stride == 1) {
                  ASSERT_EQ(got == TileVisibility::hidden, !any) << "trial " << trial;
                }
              }
        std::int64_t qp[8], kp[8];
        const int rows = int(q.length()), cols = int(k.length());
        for (int i = 0; i < rows; ++i) qp[i] = q(i);
        for (int j = 0; j < cols; ++j) kp[j] = k(j);
        std::vector<char> masked(std::size_t(rows * cols), 0);
        for_each_hidden<8, 8>(rule, qp, rows, kp, cols, [&](int i, int j) { masked[std::size_t(i * cols + j)] = 1; });
        bool any = false, all = true;
        for (int i = 0; i < rows; ++i)
          for (int j = 0; j < cols; ++j) {
            const bool v = visible(qp[i], kp[j]);
            any = any || v;
            all = all && v;
            ASSERT_EQ(masked[std::size_t(i * cols + j)] != 0, !v)
                << "trial " << trial << ": query " << qp[i] << ", key " << kp[j];
          }
        const TileVisibility blocks = classify_blocks(rule, q, k);
        ASSERT_FALSE(blocks == TileVisibility::hidden && any) << "trial " << trial;
        ASSERT_FALSE(blocks == TileVisibility::full && !all) << "trial " << trial;
      }
  }
  // The classification is more than "partial" everywhere: it finds whole tiles of both kinds.
  EXPECT_GT(full, tiles / 50);
  EXPECT_GT(hidden, tiles / 10);
}

// Rows whose entries cut a tile into more pieces than RangeTileSpans keeps (more than its spans
// after merging, or more raw pieces than it collects) are masked entry by entry: the same
// scores hidden, and register blocks never called hidden when a row sees into them.
TEST(MaskRanges, RowsOfManyPiecesFallBackToEntryByEntry) {
  std::vector<rfa_mask_range_t> list;
  for (std::int64_t k = 0; k < 16; k += 2) list.push_back({0, 8, k, k + 1, 0, 0, RFA_RANGE_FULL});       // 8 pieces
  for (std::int64_t k = 0; k < 5; ++k) list.push_back({8, 16, 3 * k, 3 * k + 1, 0, 0, RFA_RANGE_FULL});  // 5
  for (int copy = 0; copy < 3; ++copy)  // 18 raw pieces, 6 after merging
    for (std::int64_t k = 0; k < 12; k += 2) list.push_back({16, 20, k, k + 1, 0, 0, RFA_RANGE_FULL});
  const MaskRanges ranges(list.data(), std::int64_t(list.size()), 20, "ranges");
  MaskRule rule;
  rule.ranges = ranges.index();
  for (const std::int64_t q0 : {0, 4, 8, 16}) {
    std::int64_t qp[16], kp[16];
    for (int i = 0; i < 16; ++i) qp[i] = q0 + i % 4;
    for (int j = 0; j < 16; ++j) kp[j] = j;
    std::vector<char> masked(16 * 16, 0);
    for_each_hidden<16, 16>(rule, qp, 16, kp, 16, [&](int i, int j) { masked[std::size_t(i * 16 + j)] = 1; });
    const RangeTileSpans spans(rule.ranges, qp, 16, kp, 16);
    for (int i = 0; i < 16; ++i)
      for (int j = 0; j < 16; ++j) {
        const bool v = rfa_test::ranges_let_through(list, qp[i], kp[j]);
        ASSERT_EQ(masked[std::size_t(i * 16 + j)] != 0, !v) << "query " << qp[i] << ", key " << j;
        ASSERT_EQ(spans.visible(i, j), v) << "query " << qp[i] << ", key " << j;
        if (v) {
          ASSERT_TRUE(spans.any_visible(i, i + 1, j, j + 1)) << "query " << qp[i] << ", key " << j;
        }
      }
  }
}

// One entry covering a tile makes it full; two that share it between them leave it partial
// (conservative) but still exact score by score.
TEST(MaskRanges, ACoveringEntryMakesATileFull) {
  const std::vector<rfa_mask_range_t> one = {{0, 10, 0, 10, 0, 0, RFA_RANGE_FULL}};
  const MaskRanges r(one.data(), 1, 10, "ranges");
  MaskRule rule;
  rule.ranges = r.index();
  const PositionMap all = PositionMap::contiguous(0, 10);
  EXPECT_EQ(classify_tile(rule, all, 0, 10, all, 0, 10), TileVisibility::full);
  const std::vector<rfa_mask_range_t> causal = {{0, 10, 0, 10, 0, 0, RFA_RANGE_CAUSAL}};
  const MaskRanges c(causal.data(), 1, 10, "ranges");
  rule.ranges = c.index();
  EXPECT_EQ(classify_tile(rule, all, 5, 10, all, 0, 5), TileVisibility::full);
  EXPECT_EQ(classify_tile(rule, all, 0, 5, all, 5, 10), TileVisibility::hidden);
  EXPECT_EQ(classify_tile(rule, all, 0, 10, all, 0, 10), TileVisibility::partial);
}

// Every malformed entry is refused with its index and the rule it breaks.
TEST(MaskRanges, MalformedEntriesAreRefusedByName) {
  const struct {
    rfa_mask_range_t entry;
    const char* says;
  } bad[] = {
      {{-1, 3, 0, 3, 0, 0, RFA_RANGE_FULL}, "ranges[1].q_begin is -1"},
      {{4, 3, 0, 3, 0, 0, RFA_RANGE_FULL}, "ranges[1].q_end is 3"},
      {{0, 3, 0, 11, 0, 0, RFA_RANGE_FULL}, "ranges[1].k_end is 11"},
      {{0, 3, 11, 11, 0, 0, RFA_RANGE_FULL}, "ranges[1].k_begin is 11"},
      {rfa_test::with_kind({0, 3, 0, 3, 0, 0, RFA_RANGE_FULL}, 4), "ranges[1].kind is 4"},
      {{0, 3, 0, 3, 2, 1, RFA_RANGE_BAND}, "band_lo must not exceed band_hi"},
      // "Unbounded" written as the type's limit, on either side, overflows the diagonals.
      {{0, 3, 0, 3, 0, INT64_MAX, RFA_RANGE_BAND}, "must lie within +-2^61"},
      {{0, 3, 0, 3, INT64_MIN, 0, RFA_RANGE_BAND}, "must lie within +-2^61"},
  };
  for (const auto& b : bad) {
    const rfa_mask_range_t list[2] = {{0, 10, 0, 10, 0, 0, RFA_RANGE_FULL}, b.entry};
    try {
      MaskRanges r(list, 2, 10, "ranges");
      ADD_FAILURE() << "accepted an entry that should fail with: " << b.says;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), RFA_ERROR_INVALID_ARGUMENT);
      EXPECT_NE(std::string(e.what()).find(b.says), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(MaskRanges(nullptr, 2, 10, "ranges"), Error);
  EXPECT_THROW(MaskRanges(nullptr, -1, 10, "ranges"), Error);
  // Empty ranges and an empty list are allowed (they let nothing through).
  const rfa_mask_range_t empty = {3, 3, 0, 10, 0, 0, RFA_RANGE_FULL};
  const MaskRanges e(&empty, 1, 10, "ranges");
  EXPECT_FALSE(e.index().visible(3, 3));
  const MaskRanges none(nullptr, 0, 10, "ranges");
  EXPECT_FALSE(none.index().visible(0, 0));
  EXPECT_TRUE(none.index().on);
}

// Entries the band offsets' kinds make equal hash alike, others not; the offsets of a kind
// that ignores them do not count.
TEST(MaskRanges, HashSeesEveryFieldThatCounts) {
  rfa_mask_range_t a = {0, 10, 0, 10, 0, 0, RFA_RANGE_FULL};
  rfa_mask_range_t b = a;
  b.band_lo = 3;  // ignored by a full entry
  EXPECT_EQ(mask_ranges_hash(&a, 1), mask_ranges_hash(&b, 1));
  for (int field = 0; field < 5; ++field) {
    rfa_mask_range_t c = a;
    if (field == 0) c.q_begin = 1;
    if (field == 1) c.q_end = 9;
    if (field == 2) c.k_begin = 1;
    if (field == 3) c.k_end = 9;
    if (field == 4) c.kind = RFA_RANGE_CAUSAL;
    EXPECT_NE(mask_ranges_hash(&a, 1), mask_ranges_hash(&c, 1)) << "field " << field;
  }
  rfa_mask_range_t band = {0, 10, 0, 10, -1, 1, RFA_RANGE_BAND}, wider = band, lower = band;
  wider.band_hi = 2;
  lower.band_lo = -2;
  EXPECT_NE(mask_ranges_hash(&band, 1), mask_ranges_hash(&wider, 1));
  EXPECT_NE(mask_ranges_hash(&band, 1), mask_ranges_hash(&lower, 1));
}

}  // namespace
}  // namespace kernels
}  // namespace rfa
