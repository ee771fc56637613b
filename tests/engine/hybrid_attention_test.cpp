// SPDX-License-Identifier: BSD-3-Clause
// The hybrid Ulysses x ring grid against the float64 reference (strategy_case.hpp's cases, every
// dtype): a 2 x 2 grid on 4 ranks; on 2 and 3 ranks the one grid of Pu = P (a single ring
// group: Ulysses); plus Pu = 1 (Ulysses groups of one: the plain ring) on any count.
#include "engine/hybrid_attention.hpp"
#include "strategy_case.hpp"

namespace rfa {
namespace test {
namespace {

/// The grid tested on P ranks: 2 x 2 on four, else Pu = P.
int tested_degree(int ranks) { return ranks == 4 ? 2 : ranks; }

engine::StrategyChoice hybrid(int degree) { return {engine::StrategyKind::hybrid, degree, 1}; }

class HybridAttentionTest : public ::testing::TestWithParam<StrategySpec> {
 protected:
  template <class T>
  void check() {
    auto comm = world_ring();
    const auto cfg = strategy_config(GetParam(), dtype_of<T>::value);
    engine::HybridAttention attn(*comm, cfg, hybrid(tested_degree(comm->size())));
    expect_matches_reference<T>(run_attention<T>(attn, cfg, 2468));
  }
};

TEST_P(HybridAttentionTest, Float32) { check<float>(); }
TEST_P(HybridAttentionTest, BFloat16) { check<bf16_t>(); }
TEST_P(HybridAttentionTest, Float16) { check<fp16_t>(); }

INSTANTIATE_TEST_SUITE_P(Layouts, HybridAttentionTest, ::testing::ValuesIn(strategy_specs()), strategy_spec_name);

TEST(HybridAttention, DegreeOneIsTheRing) {
  auto comm = world_ring();
  const auto cfg = strategy_config({RFA_LAYOUT_ZIGZAG, RFA_MASK_CAUSAL, 4}, RFA_DTYPE_FLOAT32);
  engine::HybridAttention attn(*comm, cfg, hybrid(1));
  expect_matches_reference<float>(run_attention<float>(attn, cfg, 13579));
  EXPECT_EQ(attn.local_positions().length(), cfg.seq_total / comm->size());
}

// Group j holds the rows the layout gives position j of Pr, split in order among its Pu ranks.
TEST(HybridAttention, GroupsHoldTheLayoutsRowsOfTheirRingPosition) {
  auto comm = world_ring();
  if (comm->size() != 4) GTEST_SKIP() << "the 2 x 2 grid needs 4 ranks";
  const auto cfg = strategy_config({RFA_LAYOUT_ZIGZAG, RFA_MASK_CAUSAL, 4}, RFA_DTYPE_FLOAT32);
  engine::HybridAttention attn(*comm, cfg, hybrid(2));
  const int me = comm->rank();
  const PositionMap group = layout::positions(RFA_LAYOUT_ZIGZAG, cfg.seq_total, 2, me / 2);
  const PositionMap mine = attn.local_positions();
  ASSERT_EQ(mine.length(), 30);
  for (std::int64_t i = 0; i < 30; ++i) EXPECT_EQ(mine(i), group((me % 2) * 30 + i)) << "row " << i;
}

// With one ring group (Pu = P) the layout applies over all P ranks: the grid is Ulysses.
TEST(HybridAttention, OneGroupIsUlysses) {
  auto comm = world_ring();
  const auto cfg = strategy_config({RFA_LAYOUT_ZIGZAG, RFA_MASK_CAUSAL, 4}, RFA_DTYPE_BFLOAT16);
  const int P = comm->size();
  engine::HybridAttention grid(*comm, cfg, hybrid(P));
  engine::HybridAttention ulysses(*comm, cfg, {engine::StrategyKind::ulysses, 0, 1});
  const PositionMap expected = layout::positions(RFA_LAYOUT_ZIGZAG, cfg.seq_total, P, comm->rank());
  for (const engine::HybridAttention* attn : {&grid, &ulysses}) {
    const PositionMap mine = attn->local_positions();
    ASSERT_EQ(mine.length(), expected.length());
    for (std::int64_t i = 0; i < mine.length(); ++i) EXPECT_EQ(mine(i), expected(i)) << "row " << i;
    EXPECT_EQ(attn->ulysses_degree(), P);
  }
  EXPECT_EQ(grid.workspace_bytes(true), ulysses.workspace_bytes(true));
}

TEST(HybridAttention, RejectsADegreeThatDoesNotDivideTheRanksOrTheHeads) {
  auto comm = world_ring();
  if (comm->size() < 2) GTEST_SKIP() << "every degree of one rank is 1";
  auto cfg = strategy_config({RFA_LAYOUT_CONTIGUOUS, RFA_MASK_NONE, 1}, RFA_DTYPE_FLOAT32);
  const int P = comm->size();
  try {
    engine::HybridAttention attn(*comm, cfg, hybrid(P + 1));
    ADD_FAILURE() << "accepted degree " << P + 1;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("divides the " + std::to_string(P) + " ranks"), std::string::npos) << e.what();
  }
  cfg.heads = 2 * P + 1;
  try {
    engine::HybridAttention attn(*comm, cfg, hybrid(P));
    ADD_FAILURE() << "accepted " << cfg.heads << " heads with degree " << P;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not a multiple of the Ulysses degree"), std::string::npos) << e.what();
  }
  // Each ring group's rows must divide among its Ulysses ranks, not only the whole sequence's:
  // two ranks a group, 3 rows a group (S = 3 x groups, which itself divides by 2 where the
  // groups are even).
  if (P >= 4 && P % 2 == 0) {
    cfg.heads = 2 * P;
    const int groups = P / 2;
    cfg.seq_total = 3 * groups;
    try {
      engine::HybridAttention attn(*comm, cfg, hybrid(2));
      ADD_FAILURE() << "accepted " << cfg.seq_total << " rows over " << groups << " ring groups of 2 Ulysses ranks";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("rows, which do not divide among its 2 Ulysses ranks"), std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
}  // namespace test
}  // namespace rfa
