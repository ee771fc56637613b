// SPDX-License-Identifier: BSD-3-Clause
// rfa_model_check's kernel calibration, its arithmetic (perf/plan/kernel_calibration): the blocks
// it times, their times paired within the rounds, and the fit that inverts the performance model
// on them. Hand-made times: no MPI, no timing.
#include <gtest/gtest.h>

#include <limits>
#include <memory>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/mask_ranges.hpp"
#include "engine/attention_strategy.hpp"
#include "kernel_calibration.hpp"
#include "kernels/tile_work.hpp"
#include "model/performance_model.hpp"

namespace rfa::perf {
namespace {

/// A rank's rows as rfa_model_check calibrates them: B entries, H heads over K/V heads, L rows,
/// head dim d and V's own head dim dv (0: d).
engine::AttentionConfig rank_block(std::int64_t L, std::int64_t heads = 4, std::int64_t kv_heads = 4,
                                   std::int64_t d = 64, std::int64_t batch = 1, std::int64_t dv = 0) {
  engine::AttentionConfig c;
  c.batch = batch;
  c.seq_total = L;
  c.heads = heads;
  c.kv_heads = kv_heads;
  c.head_dim = d;
  c.value_dim = dv;
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
  EXPECT_EQ(b[kWholeBlock].config.seq_total, 2048);
  EXPECT_EQ(b[kWholeBlock].config.mask, RFA_MASK_NONE);
  EXPECT_EQ(b[kWholeBlock].calls, 1);
  EXPECT_EQ(b[kHalfBlock].config.seq_total, 1024);
  EXPECT_EQ(b[kHalfBlock].config.mask, RFA_MASK_NONE);
  // One call per K/V head, over its 4 query heads.
  EXPECT_EQ(b[kPackedCalls].calls, 2);
  EXPECT_EQ(b[kPackedCalls].config.heads, 4);
  EXPECT_EQ(b[kPackedCalls].config.kv_heads, 1);
  EXPECT_EQ(b[kPackedCalls].config.seq_total, 2048);
  EXPECT_EQ(b[kCausalBlock].config.mask, RFA_MASK_CAUSAL);
  EXPECT_EQ(b[kCausalBlock].config.window, 0);
  EXPECT_EQ(b[kCheckedWindowBlock].config.mask, RFA_MASK_CAUSAL);
  EXPECT_EQ(b[kCheckedWindowBlock].config.window, 1024);  // S/8
  EXPECT_EQ(b[kNarrowWindowBlock].config.mask, RFA_MASK_CAUSAL);
  EXPECT_EQ(b[kNarrowWindowBlock].config.window, 32);  // a third of a host forward tile's 96 keys
}

TEST(CalibrationBlocks, AreUnmaskedBlocksWhateverTheRowsCarried) {
  engine::AttentionConfig carried = rank_block(1024);
  carried.mask = RFA_MASK_CAUSAL;
  carried.window = 100;
  carried.doc_bounds = {0, 512, 1024};
  carried.doc_offsets = {0, 3};
  const rfa_mask_range_t all{0, 1024, 0, 1024, 0, 0, RFA_RANGE_FULL};
  carried.ranges = std::make_shared<const MaskRanges>(&all, 1, 1024, "the test's ranges");
  const std::vector<CalibrationBlock> b = calibration_blocks(carried, 8192);
  for (std::size_t i : {kWholeBlock, kHalfBlock, kPackedCalls}) {
    EXPECT_EQ(b[i].config.mask, RFA_MASK_NONE);
    EXPECT_EQ(b[i].config.window, 0);
  }
  for (const CalibrationBlock& block : b) {
    EXPECT_TRUE(block.config.doc_bounds.empty());
    EXPECT_TRUE(block.config.doc_offsets.empty());
    EXPECT_EQ(block.config.ranges, nullptr);
  }
}

TEST(CalibrationBlocks, TheWindowStaysInsideTheBlockAndAboveNothing) {
  // S/8 at the block's last row, one below and one above: a window of L or more masks nothing
  // more than the causal block, so it is cut to L - 1.
  EXPECT_EQ(calibration_blocks(rank_block(1024), 8 * 1023)[kCheckedWindowBlock].config.window, 1023);
  EXPECT_EQ(calibration_blocks(rank_block(1024), 8 * 1024)[kCheckedWindowBlock].config.window, 1023);
  EXPECT_EQ(calibration_blocks(rank_block(1024), 8 * 1025)[kCheckedWindowBlock].config.window, 1023);
  EXPECT_EQ(calibration_blocks(rank_block(1024), 8 * 1022)[kCheckedWindowBlock].config.window, 1022);
  // A sequence under 8 tokens: a window of 1, not 0 (no window at all).
  EXPECT_EQ(calibration_blocks(rank_block(4), 7)[kCheckedWindowBlock].config.window, 1);
  // The narrow band's 32 in blocks of 34, 33 (its last row) and 32 (one past it) rows.
  EXPECT_EQ(calibration_blocks(rank_block(34), 8 * 34)[kNarrowWindowBlock].config.window, 32);
  EXPECT_EQ(calibration_blocks(rank_block(33), 8 * 33)[kNarrowWindowBlock].config.window, 32);
  EXPECT_EQ(calibration_blocks(rank_block(32), 8 * 32)[kNarrowWindowBlock].config.window, 31);
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
  const std::vector<double> s = paired_seconds(at_speeds(base, speed), WholeBlockTime::slowest_rank);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_DOUBLE_EQ(s[0], 0.010 * 1.1);
  // The ratios within each round and rank are the true ones, whichever round a rank's median
  // comes from.
  EXPECT_NEAR(s[1] / s[0], 0.3, 1e-12);
  EXPECT_NEAR(s[2] / s[0], 0.8, 1e-12);
}

TEST(PairedSeconds, RanksInTurnsTakeTheWholeBlocksMedianOverEveryRanksRounds) {
  // Three ranks in turns on shared cores, three rounds: a core's slow moments (1.5) fall on one
  // rank or another. Each rank's median is 1.0, 1.5 and 1.0, whose slowest is the slow moment's
  // speed; over all nine turns the median is 1.0 (four of nine slow).
  const std::vector<std::vector<double>> speed = {{1.0, 1.5, 1.0}, {1.5, 1.5, 1.0}, {0.9, 1.0, 1.5}};
  const std::vector<double> base = {0.010, 0.004};
  const std::vector<double> s = paired_seconds(at_speeds(base, speed), WholeBlockTime::every_rank);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_DOUBLE_EQ(s[0], 0.010);
  EXPECT_NEAR(s[1] / s[0], 0.4, 1e-12);
  EXPECT_DOUBLE_EQ(paired_seconds(at_speeds(base, speed), WholeBlockTime::slowest_rank)[0], 0.010 * 1.5);
  // An even count of rounds: the middle two's mean; rounds whose whole block took no time left out.
  std::vector<RoundTimes> times = at_speeds(base, {{1.0, 2.0}, {1.2, 3.0}});
  EXPECT_NEAR(paired_seconds(times, WholeBlockTime::every_rank)[0], 0.010 * 1.6, 1e-15);
  times[0][1][1] = 0;
  EXPECT_DOUBLE_EQ(paired_seconds(times, WholeBlockTime::every_rank)[0], 0.010 * 1.2);
  times[0][1][0] = times[0][0][0] = times[0][0][1] = 0;
  EXPECT_THROW(paired_seconds(times, WholeBlockTime::every_rank), Error);
}

TEST(PairedSeconds, TwoRoundsOfOneRankEachAtItsOwnSpeed) {
  // Paired with the other round's whole block, the half one would come out at 1/3 and 3 times
  // its share.
  const std::vector<double> s = paired_seconds(at_speeds({0.004, 0.001}, {{1.0}, {3.0}}), WholeBlockTime::slowest_rank);
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
  EXPECT_NEAR(paired_seconds(times, WholeBlockTime::slowest_rank)[1], 0.003, 1e-15);
}

TEST(PairedSeconds, OneRoundOfOneRankIsItsOwnTime) {
  const std::vector<double> s = paired_seconds({{{0.004}}, {{0.001}}}, WholeBlockTime::slowest_rank);
  EXPECT_DOUBLE_EQ(s[0], 0.004);
  EXPECT_DOUBLE_EQ(s[1], 0.001);
  // One rank: its turns are every rank's, both estimates alike.
  EXPECT_EQ(paired_seconds({{{0.004}}, {{0.001}}}, WholeBlockTime::every_rank), s);
}

TEST(PairedSeconds, LeavesOutTheRoundsWhoseWholeBlockTookNoTime) {
  // One rank, two rounds, the second's whole block timed at 0: its pair (a ratio of infinity)
  // and its 0 left out of the whole block's median alike.
  const std::vector<double> s = paired_seconds({{{0.010}, {0.0}}, {{0.003}, {0.5}}}, WholeBlockTime::slowest_rank);
  EXPECT_DOUBLE_EQ(s[0], 0.010);
  EXPECT_NEAR(s[1], 0.003, 1e-15);
  // No round left: refused.
  EXPECT_THROW(paired_seconds({{{0.0}}, {{0.001}}}, WholeBlockTime::slowest_rank), Error);
}

TEST(PairedSeconds, RefusesBlocksOfOtherRoundsOrRanksAndNothing) {
  EXPECT_THROW(paired_seconds({}, WholeBlockTime::slowest_rank), Error);
  EXPECT_THROW(paired_seconds({RoundTimes{}}, WholeBlockTime::slowest_rank), Error);
  EXPECT_THROW(paired_seconds({RoundTimes{{}}}, WholeBlockTime::slowest_rank), Error);
  EXPECT_THROW(paired_seconds({{{1.0}, {1.0}}, {{1.0}}}, WholeBlockTime::slowest_rank), Error);  // 2 rounds and 1
  EXPECT_THROW(paired_seconds({{{1.0, 1.0}}, {{1.0}}}, WholeBlockTime::slowest_rank), Error);    // 2 ranks and 1
  EXPECT_THROW(paired_seconds({{{1.0, 1.0}}, {{1.0, 1.0}, {1.0}}}, WholeBlockTime::slowest_rank), Error);
  EXPECT_THROW(paired_seconds({{{1.0}}, {{-1e-9}}}, WholeBlockTime::slowest_rank), Error);
  EXPECT_THROW(paired_seconds({{{1.0}}, {{std::numeric_limits<double>::quiet_NaN()}}}, WholeBlockTime::slowest_rank),
               Error);
  EXPECT_THROW(paired_seconds({{{std::numeric_limits<double>::infinity()}}, {{1.0}}}, WholeBlockTime::slowest_rank),
               Error);
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
  s[kPackedCalls] = {s[kWholeBlock].first / packed[0], s[kWholeBlock].second / packed[1]};
  return s;
}

/// Fits the machine to the times truth(visible)'s model gives `block`'s calibration blocks for
/// a sequence of `seq` (the packed calls x1.08 / x1.04 faster) and checks that every figure is
/// found again.
void expect_found_again(const engine::AttentionConfig& block, std::int64_t seq, double visible) {
  const std::vector<CalibrationBlock> blocks = calibration_blocks(block, seq);
  double packed[2] = {1.08, 1.04};
  const model::MachineModel t = truth(visible);
  model::MachineModel fitted;
  fit_kernels(fitted, blocks, model_seconds(t, blocks, packed));
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

TEST(FitKernels, FindsTheMachineWhoseModelGaveTheTimes) {
  // Blocks of whole tiles both ways (1152 = 6 x 192 = 12 x 96), of a partial last tile, an odd
  // one; the checked window cut to L - 1 (S = 8L, eight ranks) and a band inside the block
  // (S = 2L, two ranks); cut tiles whose visible scores cost nothing more, and 0.8 (forward)
  // and 0.4 (backward) more.
  for (double visible : {0.0, 0.8})
    for (std::int64_t L : {1152, 1023, 2048, 4096 + 96})
      for (std::int64_t ranks : {8, 2}) {
        SCOPED_TRACE(testing::Message() << "L = " << L << ", S = " << ranks << " L, visible " << visible);
        expect_found_again(rank_block(L), ranks * L, visible);
      }
}

TEST(FitKernels, FindsItOnBatchesGroupedHeadsAndAValueHeadDimOfItsOwn) {
  // Two batch entries, 8 query heads over 2 K/V heads, d = 64 and dv = 32.
  expect_found_again(rank_block(1024, 8, 2, 64, 2, 32), 2048, 0.8);
}

/// The one cost per cut score that fits `s`'s masked blocks on `m`'s forward figures: each
/// block's cut tiles' cost over its whole time in scores, least squares.
double one_forward_cost(const model::MachineModel& m, const std::vector<CalibrationBlock>& blocks,
                        const std::vector<std::pair<double, double>>& s) {
  const engine::AttentionConfig& c = blocks[kWholeBlock].config;
  const double per_score = 2.0 * double(c.head_dim + c.dv()) * double(c.batch * c.heads);
  const PositionMap rows = PositionMap::contiguous(0, c.seq_total);
  double xy = 0, xx = 0;
  for (std::size_t i : {kCausalBlock, kCheckedWindowBlock, kNarrowWindowBlock}) {
    const kernels::MaskRule rule{true, blocks[i].config.window, nullptr, 0, {}};
    const kernels::TileWork w = kernels::count_tile_work(rule, rows, rows, m.forward_tile);
    const double whole = s[i].first * m.forward_flops_per_s / per_score;
    const double y =
        whole -
        double(c.batch * c.heads) * (w.rows + w.keys) / 2 * m.forward_row_seconds * m.forward_flops_per_s / per_score -
        w.full;
    xy += w.partial * y / (whole * whole);
    xx += w.partial * w.partial / (whole * whole);
  }
  return xy / xx;
}

TEST(FitKernels, EquationsThatCannotTellTheCostsApartFallBackToOneCostPerCutScore) {
  // Eight ranks' blocks (S = 8L) of 32 rows: the checked and the narrow window both cut to 31,
  // the causal block all but the same; of 64 rows: the checked window cut to 63, the narrow
  // band most of the block. One cost per cut score, the visible scores at 0.
  for (std::int64_t L : {32, 64}) {
    SCOPED_TRACE(L);
    const std::vector<CalibrationBlock> blocks = calibration_blocks(rank_block(L), 8 * L);
    double packed[2] = {1.0, 1.0};
    model::MachineModel fitted;
    fit_kernels(fitted, blocks, model_seconds(truth(0.8), blocks, packed));
    EXPECT_EQ(fitted.forward_masked_visible_cost, 0.0);
    EXPECT_EQ(fitted.backward_masked_visible_cost, 0.0);
    EXPECT_NEAR(fitted.forward_masked_tile_cost,
                one_forward_cost(fitted, blocks, model_seconds(truth(0.8), blocks, packed)), 1e-9);
  }
  // 256 tokens on one rank: the checked window S/8 is the narrow one's 32, and with the causal
  // block the two costs are still told apart.
  expect_found_again(rank_block(256), 256, 0.8);
}

TEST(FitKernels, ACostBelowZeroFallsBackToOneCostPerCutScore) {
  const engine::AttentionConfig block = rank_block(1024);
  const std::vector<CalibrationBlock> blocks = calibration_blocks(block, 2048);
  double packed[2] = {1.0, 1.0};
  // The narrow band, mostly hidden, at one and a half times its time: the two costs' fit would
  // take a visible score below 0 (the more a tile shows, the cheaper); the fit keeps one cost
  // per cut score over the three blocks.
  std::vector<std::pair<double, double>> s = model_seconds(truth(), blocks, packed);
  s[kNarrowWindowBlock].first *= 1.5;
  model::MachineModel fitted;
  fit_kernels(fitted, blocks, s);
  EXPECT_EQ(fitted.forward_masked_visible_cost, 0.0);
  EXPECT_NEAR(fitted.forward_masked_tile_cost, one_forward_cost(fitted, blocks, s), 1e-9);
  EXPECT_GT(fitted.forward_masked_tile_cost, truth().forward_masked_tile_cost);
  // The backward's own fit untouched.
  EXPECT_NEAR(fitted.backward_masked_tile_cost, truth().backward_masked_tile_cost, 1e-6);
  EXPECT_NEAR(fitted.backward_masked_visible_cost, 0.0, 1e-6);
}

TEST(FitKernels, AHalfBlockAtLeastHalfAsLongLeavesTheRowsNothing) {
  const engine::AttentionConfig block = rank_block(1024);
  const std::vector<CalibrationBlock> blocks = calibration_blocks(block, 8192);
  double packed[2] = {1.0, 1.0};
  std::vector<std::pair<double, double>> s = model_seconds(truth(), blocks, packed);
  // The half block at half the whole one's time, and just under it.
  s[kHalfBlock] = {s[kWholeBlock].first / 2, s[kWholeBlock].second * 0.4999};
  model::MachineModel fitted;
  fit_kernels(fitted, blocks, s);
  EXPECT_EQ(fitted.forward_row_seconds, 0.0);
  const double flops = 4.0 * 64 * 4 * 1024.0 * 1024.0;
  EXPECT_NEAR(fitted.forward_flops_per_s, flops / s[kWholeBlock].first, 1e-6 * fitted.forward_flops_per_s);
  EXPECT_GT(fitted.backward_row_seconds, 0.0);
  // A half block under a quarter of the whole one: a cost per row below 0, taken as 0.
  s[kHalfBlock].second = s[kWholeBlock].second * 0.2;
  fit_kernels(fitted, blocks, s);
  EXPECT_EQ(fitted.backward_row_seconds, 0.0);
}

TEST(FitKernels, RefusesTimesThatAreNotOnePairPerBlockOrNotAboveZero) {
  const std::vector<CalibrationBlock> blocks = calibration_blocks(rank_block(1024), 8192);
  model::MachineModel m;
  EXPECT_THROW(fit_kernels(m, blocks, std::vector<std::pair<double, double>>(5, {1.0, 1.0})), Error);
  EXPECT_THROW(fit_kernels(m, {blocks[0]}, std::vector<std::pair<double, double>>(1, {1.0, 1.0})), Error);
  for (double bad : {0.0, -1.0, std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN()}) {
    std::vector<std::pair<double, double>> s(kCalibrationBlocks, {1.0, 1.0});
    s[kPackedCalls].second = bad;
    EXPECT_THROW(fit_kernels(m, blocks, s), Error) << bad;
    s[kPackedCalls].second = 1.0;
    s[kWholeBlock].first = bad;
    EXPECT_THROW(fit_kernels(m, blocks, s), Error) << bad;
  }
}

}  // namespace
}  // namespace rfa::perf
