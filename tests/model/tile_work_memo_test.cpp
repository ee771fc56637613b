// SPDX-License-Identifier: BSD-3-Clause
// The memo the model keeps for a prediction (model/tile_work_memo.hpp): one memo asked about
// every block of every layout, mask, window and tile size in turn (so that a key missing a
// field would answer one block with another's count) gives the kernels' count
// (kernels/tile_work.hpp, itself tested tile by tile); blocks under the causal mask and the
// window alone are remembered by the distance between their maps (a contiguous ring of P ranks
// has 2P - 1), blocks with documents are counted each time.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "kernels/tile_work.hpp"
#include "layout/sequence_layout.hpp"
#include "model/tile_work_memo.hpp"

namespace rfa::model {
namespace {

TEST(TileWorkMemo, AnswersEveryBlockAsCountedAndRemembersBlocksAtTheSameDistance) {
  const std::int64_t S = 720;
  const std::vector<std::int64_t> no_docs, docs = {0, 100, 100, 333, 610, 720};
  TileWorkMemo memo;
  for (rfa_layout_t layout : {RFA_LAYOUT_CONTIGUOUS, RFA_LAYOUT_ZIGZAG, RFA_LAYOUT_STRIPE})
    for (int P : {1, 3, 4})
      for (bool causal : {false, true})
        for (std::int64_t window : {0, 1, 200})
          for (const std::vector<std::int64_t>* d : {&no_docs, &docs})
            for (const kernels::TileShape tile : {kernels::TileShape{16, 8, false}, {7, 13, true}, {16, 8, true}}) {
              kernels::MaskRule rule{causal, window, d->empty() ? nullptr : d->data(), std::int64_t(d->size()), {}};
              for (int me = 0; me < P; ++me)
                for (int owner = 0; owner < P; ++owner) {
                  const PositionMap q = layout::positions(layout, S, P, me), k = layout::positions(layout, S, P, owner);
                  const kernels::TileWork want = kernels::count_tile_work(rule, q, k, tile),
                                          got = memo.count(rule, q, k, tile);
                  std::ostringstream where;
                  where << layout::layout_name(layout) << " P=" << P << " " << me << "<-" << owner << " causal "
                        << causal << " window " << window << " docs " << d->size() << " tiles " << tile.q << "x"
                        << tile.k << (tile.cut_at_segments ? " cut" : "");
                  ASSERT_EQ(got.full, want.full) << where.str();
                  ASSERT_EQ(got.partial, want.partial) << where.str();
                  ASSERT_EQ(got.partial_visible, want.partial_visible) << where.str();
                  ASSERT_EQ(got.rows, want.rows) << where.str();
                  ASSERT_EQ(got.keys, want.keys) << where.str();
                }
            }
  EXPECT_GT(memo.remembered(), 0);

  const int P = 8;
  const kernels::MaskRule window_rule{true, 100, nullptr, 0, {}}, docs_rule{true, 0, docs.data(), 6, {}};
  for (const kernels::MaskRule* rule : {&window_rule, &docs_rule}) {
    TileWorkMemo ring;
    for (int me = 0; me < P; ++me)
      for (int owner = 0; owner < P; ++owner)
        ring.count(*rule, layout::positions(RFA_LAYOUT_CONTIGUOUS, S, P, me),
                   layout::positions(RFA_LAYOUT_CONTIGUOUS, S, P, owner), kernels::TileShape{16, 8});
    EXPECT_EQ(ring.asked(), P * P);
    EXPECT_EQ(ring.remembered(), rule == &window_rule ? P * P - (2 * P - 1) : 0);
  }
}

}  // namespace
}  // namespace rfa::model
