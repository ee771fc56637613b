// SPDX-License-Identifier: BSD-3-Clause
// The tile classification against every (query, key) pair of the tile: a tile called hidden
// has no visible pair, a tile called full has no hidden one (partial may be conservative), and
// the per-score mask of a partial tile hides exactly the pairs the rule hides. Exhaustive over
// every sub-range of small position maps (contiguous, strided as the stripe layout's, two
// segments as zigzag's, queries before, on and after the keys), causal or not, windows of 0 to
// 9 and documents, so a classification off by one position at any edge fails here whatever
// tile sizes the kernels use; tiles of contiguous segments, across segments too, exactly.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/positions.hpp"
#include "documented_mask.hpp"
#include "kernels/tile_visibility.hpp"

namespace rfa {
namespace kernels {
namespace {

using rfa_test::DocumentedMask;
using rfa_test::small_position_maps;

bool unit_strides(const PositionMap& m) {
  for (int s = 0; s < m.count; ++s)
    if (m.seg[s].stride != 1) return false;
  return true;
}

std::string describe(const MaskRule& rule, const std::vector<std::int64_t>& docs) {
  std::string s = std::string(rule.causal ? "causal" : "full") + " window " + std::to_string(rule.window);
  for (std::int64_t b : docs) s += " " + std::to_string(b);
  return s;
}

TEST(TileVisibility, AgreesWithEveryPairOfEverySubRange) {
  // None; short documents (a one-token one); an empty one inside; empty first and last ones.
  const std::vector<std::vector<std::int64_t>> document_sets = {
      {}, {0, 4, 5, 9, 20}, {0, 3, 3, 11, 20}, {0, 0, 4, 20, 20}};
  int tiles = 0;
  for (bool causal : {false, true})
    for (std::int64_t window = 0; window <= 9; ++window)
      for (const auto& docs : document_sets) {
        MaskRule rule;
        rule.causal = causal;
        rule.window = window;
        rule.doc_bounds = docs.empty() ? nullptr : docs.data();
        rule.doc_bound_count = std::int64_t(docs.size());
        // The pairs' truth from the documented rules, not from MaskRule's code under test.
        const DocumentedMask visible{causal, window, &docs};
        for (const PositionMap& q : small_position_maps())
          for (const PositionMap& k : small_position_maps())
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
                    if (got == TileVisibility::hidden && any)
                      FAIL() << describe(rule, docs) << ": a tile with a visible pair is hidden (queries " << q(r0)
                             << ".., rows " << r0 << "-" << r1 << "; keys " << k(c0) << ".., rows " << c0 << "-" << c1
                             << ")";
                    if (got == TileVisibility::full && !all)
                      FAIL() << describe(rule, docs) << ": a tile with a hidden pair is full (queries " << q(r0)
                             << ".., rows " << r0 << "-" << r1 << "; keys " << k(c0) << ".., rows " << c0 << "-" << c1
                             << ")";
                    // Contiguous segments are classified exactly, a tile that crosses from one
                    // segment to the next (zigzag's two chunks) too: piece by piece, not by the
                    // span between its pieces.
                    if (unit_strides(q) && unit_strides(k) && docs.empty()) {
                      EXPECT_EQ(got == TileVisibility::hidden, !any) << describe(rule, docs);
                      EXPECT_EQ(got == TileVisibility::full, all) << describe(rule, docs);
                    }
                  }
      }
  EXPECT_GT(tiles, 100000);
}

// The per-score mask of a partial tile hides exactly the pairs the rule hides, and whole maps
// (a ring step's blocks, segment by segment) are classified as their pairs say.
TEST(TileVisibility, ScoreMaskAndBlockClassificationAgreeWithThePairs) {
  const std::vector<std::int64_t> docs = {0, 4, 5, 9, 20};
  for (bool causal : {false, true})
    for (std::int64_t window = 0; window <= 9; ++window)
      for (bool with_documents : {false, true}) {
        MaskRule rule;
        rule.causal = causal;
        rule.window = window;
        if (with_documents) {
          rule.doc_bounds = docs.data();
          rule.doc_bound_count = std::int64_t(docs.size());
        }
        const DocumentedMask visible{causal, window, with_documents ? &docs : nullptr};
        for (const PositionMap& q : small_position_maps())
          for (const PositionMap& k : small_position_maps()) {
            std::int64_t qp[8], kp[8];
            const int rows = int(q.length()), cols = int(k.length());
            for (int i = 0; i < rows; ++i) qp[i] = q(i);
            for (int j = 0; j < cols; ++j) kp[j] = k(j);
            std::vector<char> hidden(std::size_t(rows * cols), 0);
            for_each_hidden<8, 8>(rule, qp, rows, kp, cols,
                                  [&](int i, int j) { hidden[std::size_t(i * cols + j)] = 1; });
            bool any = false, all = true;
            for (int i = 0; i < rows; ++i)
              for (int j = 0; j < cols; ++j) {
                const bool v = visible(qp[i], kp[j]);
                any = any || v;
                all = all && v;
                ASSERT_EQ(hidden[std::size_t(i * cols + j)] != 0, !v)
                    << describe(rule, with_documents ? docs : std::vector<std::int64_t>{}) << ": query " << qp[i]
                    << ", key " << kp[j];
              }
            const TileVisibility got = classify_blocks(rule, q, k);
            EXPECT_FALSE(got == TileVisibility::hidden && any) << "a block pair with a visible pair is hidden";
            EXPECT_FALSE(got == TileVisibility::full && !all) << "a block pair with a hidden pair is full";
          }
      }
}

}  // namespace
}  // namespace kernels
}  // namespace rfa
