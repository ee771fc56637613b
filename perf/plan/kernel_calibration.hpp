// SPDX-License-Identifier: BSD-3-Clause
// The kernels' calibration of rfa_model_check, its arithmetic: which blocks it times, how their
// timings over the rounds and ranks become one time per block (paired within a round), and how
// the performance model's kernel figures (a rate per score, a cost per row, the packed-head
// speedup, a masked tile's cost) are fitted to those times. No timing and no communication here:
// rfa_model_check times the blocks and gathers their times.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "engine/attention_config.hpp"
#include "model/performance_model.hpp"

namespace rfa {
namespace perf {

/// A block the calibration times: its problem and how many calls in a row make one timing.
struct CalibrationBlock {
  engine::AttentionConfig config;
  int calls = 1;
};

/// Where each block stands in calibration_blocks()'s list (and in the times that follow it).
enum CalibrationBlockIndex : std::size_t {
  kWholeBlock,          ///< unmasked, L rows
  kHalfBlock,           ///< unmasked, L/2 rows
  kPackedCalls,         ///< one call per K/V head over its query heads on packed rows
  kCausalBlock,         ///< causal, no window
  kCheckedWindowBlock,  ///< causal, the checked problems' window
  kNarrowWindowBlock,   ///< causal, a window narrower than the host kernels' tiles
  kCalibrationBlocks    ///< how many there are
};

/// The narrow band's window: a third of a host forward tile's 96 keys (the fp32 host kernels'
/// tiles, which rfa_model_check calibrates), so that most of each tile it cuts is hidden.
inline constexpr std::int64_t kNarrowWindow = 32;

/// The blocks the calibration times, for a rank's rows `block` (taken contiguous and unmasked:
/// its layout, mask, window, documents and ranges set aside) of a sequence of `seq` tokens, in CalibrationBlockIndex's
/// order: the whole block and half of it (a rate per score and a cost per row); the packed calls, as the all-gather
/// makes them (the packed-head speedup); three causal blocks, with no window (its diagonal tiles), with the checked
/// problems' window S/8 (tiles along both edges of a band) and with kNarrowWindow, each window at most L - 1: three
/// equations for what a cut tile costs per score and per visible score.
std::vector<CalibrationBlock> calibration_blocks(const engine::AttentionConfig& block, std::int64_t seq);

/// Every rank's time of one calibration block in each round: [round][rank].
using RoundTimes = std::vector<std::vector<double>>;

/// How the whole calibration block's time is taken from its rounds (paired_seconds).
enum class WholeBlockTime {
  /// The slowest rank's median over its rounds: ranks on cores of their own, where a core that
  /// is slow stays one rank's and every pass waits for that rank.
  slowest_rank,
  /// The median over every rank's rounds together: ranks that take turns on shared cores, where
  /// a slow moment of a core falls on whichever rank runs there then. Each rank's median is then
  /// a sample of one distribution, and the slowest of several such medians lands in its slow
  /// tail: with eight ranks in turns on two cores, 24-28% above the median over every turn
  /// (perf/RESULTS.md, "2026-12-04 — the calibration in turns, over every rank's rounds").
  every_rank,
};

/// Each block's time from `times` (one RoundTimes per block, the whole block first): the whole
/// block's is taken as `whole_time` says; every other block's is the whole's times the median, over
/// every rank's rounds, of its time over the whole block's in the same round and rank (rounds
/// whose whole block took no time left out of both). A rank's blocks in one round run one after
/// another at one speed of the machine, so their ratio holds where the speed swings between
/// rounds and ranks. Throws rfa::Error (RFA_ERROR_INVALID_ARGUMENT) where the blocks' rounds or
/// ranks differ in number, there are none, a time is below 0 or not finite, or the whole block
/// took no time in any round.
std::vector<double> paired_seconds(const std::vector<RoundTimes>& times, WholeBlockTime whole_time);

/// Fits `m`'s kernel rates, costs per row, packed-head speedups and masked-tile costs to the
/// times of `blocks` (calibration_blocks(), whose whole block gives the rows and heads;
/// `seconds`: forward and backward, in that order), on `m`'s forward and backward tiles:
/// time = scores x FLOPs per score / rate + rows x cost per row, per head, solved exactly on the
/// whole and the half block (a cost per row below 0, or one that leaves the scores no time, is
/// taken as 0); the packed-head speedup is the whole block's time over the packed calls'; what
/// a cut tile costs per score and per visible score (MachineModel::forward_masked_tile_cost and
/// forward_masked_visible_cost) is fitted to the three masked blocks by least squares, each
/// equation relative to its block's time. One cost per cut score alone (at least 0, visible
/// scores at 0) where that fit gives a cost below 0, or where the equations do not tell the two
/// costs apart (their cut tiles' visible shares too close, as in blocks of up to 64 rows at
/// eight ranks or more, where the checked window is cut to L - 1). Throws
/// rfa::Error (RFA_ERROR_INVALID_ARGUMENT) where there are not kCalibrationBlocks blocks with a
/// pair of times each, or a time is not finite and above 0.
void fit_kernels(model::MachineModel& m, const std::vector<CalibrationBlock>& blocks,
                 const std::vector<std::pair<double, double>>& seconds);

}  // namespace perf
}  // namespace rfa
