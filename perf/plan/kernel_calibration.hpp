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

/// How many blocks calibration_blocks() gives.
inline constexpr std::size_t kCalibrationBlocks = 6;

/// The blocks the calibration times, for a rank's rows `block` (unmasked, contiguous) of a
/// sequence of `seq` tokens, in this order: the whole block (L rows); half of it (L/2 rows;
/// with the whole one a rate per score and a cost per row); one call per K/V head over that
/// head's query heads on packed rows, as the all-gather makes them (the packed-head speedup);
/// three causal blocks, one with no window (its diagonal tiles), one with the checked problems'
/// window, S/8 (tiles along both edges of a band), and one with a window of 32 (a third of a host
/// forward tile's keys: a band narrower than the tiles, most of each tile it cuts hidden), each
/// window at most L - 1: three equations for what a cut tile costs per score and per visible score.
std::vector<CalibrationBlock> calibration_blocks(const engine::AttentionConfig& block, std::int64_t seq);

/// Every rank's time of one calibration block in each round: [round][rank].
using RoundTimes = std::vector<std::vector<double>>;

/// Each block's time from `times` (one RoundTimes per block, the first the whole block): the
/// first block's is its slowest rank's median over the rounds; every other block's is the
/// first's times the median, over every rank's rounds, of its time over the first block's in
/// the same round and rank. A rank's blocks in one round run within a few tens of milliseconds
/// of one another at one speed of the machine, so their ratio holds where the speed swings
/// between rounds and ranks. Throws rfa::Error (RFA_ERROR_INVALID_ARGUMENT) where the blocks'
/// rounds or ranks differ in number, or there are none.
std::vector<double> paired_seconds(const std::vector<RoundTimes>& times);

/// Fits `m`'s kernel rates, costs per row, packed-head speedups and masked-tile costs to the
/// times of calibration_blocks(block, seq) (`seconds`: forward and backward, in that order):
/// time = scores x FLOPs per score / rate + rows x cost per row, per head, solved exactly on the
/// whole and the half block (a cost per row below 0, or one that leaves the scores no time, is
/// taken as 0); the packed-head speedup is the whole block's time over the packed calls'; what
/// a cut tile costs per score and per visible score (MachineModel::forward_masked_tile_cost and
/// forward_masked_visible_cost) is fitted to the three masked blocks by least squares, each to
/// its relative error, and where that gives a cost below 0, one cost per score alone. Throws
/// rfa::Error (RFA_ERROR_INVALID_ARGUMENT) where `seconds` is not one pair per block.
void fit_kernels(model::MachineModel& m, const engine::AttentionConfig& block,
                 const std::vector<CalibrationBlock>& blocks, const std::vector<std::pair<double, double>>& seconds);

}  // namespace perf
}  // namespace rfa
