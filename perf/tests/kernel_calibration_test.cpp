// SPDX-License-Identifier: BSD-3-Clause
// rfa_model_check's kernel calibration, its arithmetic (perf/plan/kernel_calibration): the blocks
// it times, their times paired within the rounds, and the fit that inverts the performance model
// on them. Hand-made times: no MPI, no timing.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/error.hpp"
#include "engine/attention_strategy.hpp"
#include "kernel_calibration.hpp"
#include "model/performance_model.hpp"

namespace rfa::perf {
namespace {

/// A rank's rows as rfa_model_check calibrates them: B=1, H heads over K/V heads, L rows, d.
engine::AttentionConfig rank_block(std::int64_t L, std::int64_t heads = 4, std::int64_t kv_heads = 4,
                                   std::int64_t d = 64) {
  engine::AttentionConfig c;
  c.batch = 1;
  c.seq_total = L;
  c.heads = heads;
  c.kv_heads = kv_heads;
  c.head_dim = d;
  c.dtype = RFA_DTYPE_FLOAT32;
  c.layout = RFA_LAYOUT_CONTIGUOUS;
  c.mask = RFA_MASK_NONE;
  c.window = 0;
  return c;
}

TEST(CalibrationBlocks, WholeHalfPackedCausalAndTheCheckedWindow) {
  // Four ranks' blocks of S = 8192: L = 2048.
  const std::vector<CalibrationBlock> b = calibration_blocks(rank_block(2048, 8, 2), 8192);
  ASSERT_EQ(b.size(), kCalibrationBlocks);
  EXPECT_EQ(b[0].config.seq_total, 2048);
  EXPECT_EQ(b[0].config.mask, RFA_MASK_NONE);
  EXPECT_EQ(b[0].calls, 1);
  EXPECT_EQ(b[1].config.seq_total, 1024);
  EXPECT_EQ(b[1].config.mask, RFA_MASK_NONE);
  // One call per K/V head, over its 4 query heads.
  EXPECT_EQ(b[2].calls, 2);
  EXPECT_EQ(b[2].config.heads, 4);
  EXPECT_EQ(b[2].config.kv_heads, 1);
  EXPECT_EQ(b[2].config.seq_total, 2048);
  EXPECT_EQ(b[3].config.mask, RFA_MASK_CAUSAL);
  EXPECT_EQ(b[3].config.window, 0);
  EXPECT_EQ(b[4].config.mask, RFA_MASK_CAUSAL);
  EXPECT_EQ(b[4].config.window, 1024);  // S/8
  EXPECT_EQ(b[5].config.mask, RFA_MASK_CAUSAL);
  EXPECT_EQ(b[5].config.window, 32);  // a third of a host forward tile's 96 keys
}

TEST(CalibrationBlocks, TheWindowStaysInsideTheBlockAndAboveNothing) {
  // S/8 at the block's last row, one below and one above: a window of L or more masks nothing
  // more than the causal block, so it is cut to L - 1.
  EXPECT_EQ(calibration_blocks(rank_block(1024), 8 * 1023)[4].config.window, 1023);
  EXPECT_EQ(calibration_blocks(rank_block(1024), 8 * 1024)[4].config.window, 1023);
  EXPECT_EQ(calibration_blocks(rank_block(1024), 8 * 1025)[4].config.window, 1023);
  EXPECT_EQ(calibration_blocks(rank_block(1024), 8 * 1022)[4].config.window, 1022);
  // A sequence under 8 tokens: a window of 1, not 0 (no window at all).
  EXPECT_EQ(calibration_blocks(rank_block(4), 7)[4].config.window, 1);
  // The narrow band's 32 in blocks of 34, 33 (its last row) and 32 (one past it) rows.
  EXPECT_EQ(calibration_blocks(rank_block(34), 8 * 34)[5].config.window, 32);
  EXPECT_EQ(calibration_blocks(rank_block(33), 8 * 33)[5].config.window, 32);
  EXPECT_EQ(calibration_blocks(rank_block(32), 8 * 32)[5].config.window, 31);
}

/// Times of blocks whose true seconds are `base`, each (round, rank) at its own speed of the
/// machine (`speed[round][rank]`, a factor on the time), common to the blocks it times then.
std::vector<RoundTimes> at_speeds(const std::vector<double>& base, const std::vector<std::vector<double>>& speed) {
  std::vector<RoundTimes> times(base.size(), RoundTimes(speed.size(), std::vector<double>(speed[0].size())));
  for (std::size_t i = 0; i < base.size(); ++i)
    for (std::size_t r = 0; r < speed.size(); ++r)
      for (std::size_t k = 0; k < speed[r].size(); ++k) times[i][r][k] = base[i] * speed[r][k];
  return times;
}

TEST(PairedSeconds, TheFirstBlocksSlowestRankAndTheOthersRatiosWithinTheirRounds) {
  // The ranks' speeds swing between rounds, and not alike: rank 0's median 1.05, rank 1's 1.1.
  const std::vector<std::vector<double>> speed = {{1.0, 1.2}, {0.6, 2.0}, {1.5, 0.9}, {1.1, 1.0}};
  const std::vector<double> base = {0.010, 0.003, 0.008};
  const std::vector<double> s = paired_seconds(at_speeds(base, speed));
  ASSERT_EQ(s.size(), 3u);
  EXPECT_DOUBLE_EQ(s[0], 0.010 * 1.1);
  // Each block's own medians would have taken its slowest rank at another round's speed; the
  // paired ratios are the true ones.
  EXPECT_NEAR(s[1] / s[0], 0.3, 1e-12);
  EXPECT_NEAR(s[2] / s[0], 0.8, 1e-12);
}

TEST(PairedSeconds, TwoRoundsOfOneRankEachAtItsOwnSpeed) {
  // Paired with the other round's whole block, the half one would come out at 1/3 and 3 times
  // its share.
  const std::vector<double> s = paired_seconds(at_speeds({0.004, 0.001}, {{1.0}, {3.0}}));
  EXPECT_DOUBLE_EQ(s[0], 0.004 * 2.0);
  EXPECT_NEAR(s[1] / s[0], 0.25, 1e-12);
}

TEST(PairedSeconds, DisturbancesOnOneBlockAreOutvotedByTheOtherRanksRounds) {
  const std::vector<std::vector<double>> even(3, std::vector<double>(3, 1.0));
  std::vector<RoundTimes> times = at_speeds({0.010, 0.003}, even);
  // Rank 1's half block disturbed in two of its three rounds (its own median 1.4 times the
  // truth, which the blocks' separate medians would have taken as the slowest rank's), rank 2's
  // in one: three disturbed pairs of nine.
  times[1][0][1] *= 1.4;
  times[1][2][1] *= 1.4;
  times[1][1][2] *= 1.4;
  EXPECT_NEAR(paired_seconds(times)[1], 0.003, 1e-15);
}

TEST(PairedSeconds, OneRoundOfOneRankIsItsOwnTime) {
  const std::vector<double> s = paired_seconds({{{0.004}}, {{0.001}}});
  EXPECT_DOUBLE_EQ(s[0], 0.004);
  EXPECT_DOUBLE_EQ(s[1], 0.001);
}

TEST(PairedSeconds, RefusesBlocksOfOtherRoundsOrRanksAndNothing) {
  EXPECT_THROW(paired_seconds({}), Error);
  EXPECT_THROW(paired_seconds({RoundTimes{}}), Error);
  EXPECT_THROW(paired_seconds({RoundTimes{{}}}), Error);
  EXPECT_THROW(paired_seconds({{{1.0}, {1.0}}, {{1.0}}}), Error);  // 2 rounds and 1
  EXPECT_THROW(paired_seconds({{{1.0, 1.0}}, {{1.0}}}), Error);    // 2 ranks and 1
  EXPECT_THROW(paired_seconds({{{1.0, 1.0}}, {{1.0, 1.0}, {1.0}}}), Error);
}

/// The machine the fit should find: a rank on a core of its own, a cut tile's visible scores
/// costing `visible` beyond its cost per score.
model::MachineModel truth(double visible = 0.0) {
  model::MachineModel m;
  m.forward_flops_per_s = 130e9;
  m.backward_flops_per_s = 110e9;
  m.forward_row_seconds = 420e-9;
  m.backward_row_seconds = 750e-9;
  m.forward_masked_tile_cost = 1.55;
  m.backward_masked_tile_cost = 1.05;
  m.forward_masked_visible_cost = visible;
  m.backward_masked_visible_cost = visible / 2;
  return m;
}

/// What the model predicts each calibration block takes on one rank of `m` (the packed calls:
/// the whole block's time over `packed`).
std::vector<std::pair<double, double>> model_seconds(const model::MachineModel& m,
                                                     const std::vector<CalibrationBlock>& blocks, double packed[2]) {
  std::vector<std::pair<double, double>> s;
  for (const CalibrationBlock& b : blocks) {
    const model::Prediction p = model::predict(b.config, {engine::StrategyKind::ring, 0, 1}, 1, m);
    s.emplace_back(p.forward.compute_seconds, p.backward.compute_seconds);
  }
  s[2] = {s[0].first / packed[0], s[0].second / packed[1]};
  return s;
}

TEST(FitKernels, FindsTheMachineWhoseModelGaveTheTimes) {
  // Blocks of whole tiles and of a partial last tile; cut tiles whose visible scores cost
  // nothing more, and 0.8 (forward) and 0.4 (backward) more.
  for (double visible : {0.0, 0.8})
    for (std::int64_t L : {1024, 2048, 4096 + 96}) {
      SCOPED_TRACE(testing::Message() << "L = " << L << ", visible " << visible);
      const engine::AttentionConfig block = rank_block(L);
      const std::vector<CalibrationBlock> blocks = calibration_blocks(block, 8 * L);
      double packed[2] = {1.08, 1.04};
      const model::MachineModel t = truth(visible);
      model::MachineModel fitted;
      fit_kernels(fitted, block, blocks, model_seconds(t, blocks, packed));
      EXPECT_NEAR(fitted.forward_flops_per_s / t.forward_flops_per_s, 1.0, 1e-9);
      EXPECT_NEAR(fitted.backward_flops_per_s / t.backward_flops_per_s, 1.0, 1e-9);
      EXPECT_NEAR(fitted.forward_row_seconds / t.forward_row_seconds, 1.0, 1e-9);
      EXPECT_NEAR(fitted.backward_row_seconds / t.backward_row_seconds, 1.0, 1e-9);
      EXPECT_NEAR(fitted.packed_head_forward_speedup, 1.08, 1e-12);
      EXPECT_NEAR(fitted.packed_head_backward_speedup, 1.04, 1e-12);
      EXPECT_NEAR(fitted.forward_masked_tile_cost, t.forward_masked_tile_cost, 1e-6);
      EXPECT_NEAR(fitted.backward_masked_tile_cost, t.backward_masked_tile_cost, 1e-6);
      EXPECT_NEAR(fitted.forward_masked_visible_cost, t.forward_masked_visible_cost, 1e-6);
      EXPECT_NEAR(fitted.backward_masked_visible_cost, t.backward_masked_visible_cost, 1e-6);
    }
}

TEST(FitKernels, ACostBelowZeroFallsBackToOneCostPerCutScore) {
  const engine::AttentionConfig block = rank_block(1024);
  const std::vector<CalibrationBlock> blocks = calibration_blocks(block, 8192);
  double packed[2] = {1.0, 1.0};
  // The narrow band, mostly hidden, at three times its time: the two costs' exact fit would
  // take a visible score below 0 (the more a tile shows, the cheaper); the fit keeps one cost
  // per cut score, above the truth's, which the narrow band pulls up.
  std::vector<std::pair<double, double>> s = model_seconds(truth(), blocks, packed);
  s[5].first *= 3;
  model::MachineModel fitted;
  fit_kernels(fitted, block, blocks, s);
  EXPECT_EQ(fitted.forward_masked_visible_cost, 0.0);
  EXPECT_GT(fitted.forward_masked_tile_cost, truth().forward_masked_tile_cost);
  // The backward's own fit untouched.
  EXPECT_NEAR(fitted.backward_masked_tile_cost, truth().backward_masked_tile_cost, 1e-6);
}

TEST(FitKernels, AHalfBlockAtLeastHalfAsLongLeavesTheRowsNothing) {
  const engine::AttentionConfig block = rank_block(1024);
  const std::vector<CalibrationBlock> blocks = calibration_blocks(block, 8192);
  double packed[2] = {1.0, 1.0};
  std::vector<std::pair<double, double>> s = model_seconds(truth(), blocks, packed);
  // The half block at half the whole one's time, and just under it.
  s[1] = {s[0].first / 2, s[0].second * 0.4999};
  model::MachineModel fitted;
  fit_kernels(fitted, block, blocks, s);
  EXPECT_EQ(fitted.forward_row_seconds, 0.0);
  const double flops = 4.0 * 64 * 4 * 1024.0 * 1024.0;
  EXPECT_NEAR(fitted.forward_flops_per_s, flops / s[0].first, 1e-6 * fitted.forward_flops_per_s);
  EXPECT_GT(fitted.backward_row_seconds, 0.0);
  // A half block under a quarter of the whole one: a cost per row below 0, taken as 0.
  s[1].second = s[0].second * 0.2;
  fit_kernels(fitted, block, blocks, s);
  EXPECT_EQ(fitted.backward_row_seconds, 0.0);
}

TEST(FitKernels, RefusesTimesThatAreNotOnePairPerBlock) {
  const engine::AttentionConfig block = rank_block(1024);
  const std::vector<CalibrationBlock> blocks = calibration_blocks(block, 8192);
  model::MachineModel m;
  EXPECT_THROW(fit_kernels(m, block, blocks, std::vector<std::pair<double, double>>(5, {1.0, 1.0})), Error);
  EXPECT_THROW(fit_kernels(m, block, {blocks[0]}, std::vector<std::pair<double, double>>(1, {1.0, 1.0})), Error);
}

}  // namespace
}  // namespace rfa::perf
