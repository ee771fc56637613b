// SPDX-License-Identifier: BSD-3-Clause
#include "kernel_calibration.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "attention_work.hpp"
#include "core/error.hpp"
#include "core/positions.hpp"
#include "kernels/tile_work.hpp"
#include "result_json.hpp"

namespace rfa {
namespace perf {

std::vector<CalibrationBlock> calibration_blocks(const engine::AttentionConfig& block, std::int64_t seq) {
  engine::AttentionConfig plain = block;
  plain.layout = RFA_LAYOUT_CONTIGUOUS;
  plain.mask = RFA_MASK_NONE;
  plain.window = 0;
  plain.doc_bounds.clear();
  plain.doc_offsets.clear();
  plain.ranges.reset();
  std::vector<CalibrationBlock> blocks(kCalibrationBlocks, CalibrationBlock{plain, 1});
  blocks[kHalfBlock].config.seq_total = plain.seq_total / 2;
  // Calls over one K/V head (with its query heads) on packed rows, as the all-gather makes
  // them: one such call per K/V head, the same scores as the interleaved heads in as long a run
  // (calls much shorter than the others would be timed differently on shared cores).
  blocks[kPackedCalls].calls = int(plain.kv_heads);
  blocks[kPackedCalls].config.heads = plain.heads / plain.kv_heads;
  blocks[kPackedCalls].config.kv_heads = 1;
  const std::pair<std::size_t, std::int64_t> masked[3] = {
      {kCausalBlock, 0}, {kCheckedWindowBlock, seq / 8}, {kNarrowWindowBlock, kNarrowWindow}};
  for (const auto& [index, window] : masked) {
    engine::AttentionConfig& c = blocks[index].config;
    c.mask = RFA_MASK_CAUSAL;
    c.window =
        index == kCausalBlock ? 0 : std::max<std::int64_t>(1, std::min<std::int64_t>(window, plain.seq_total - 1));
  }
  return blocks;
}

std::vector<double> paired_seconds(const std::vector<RoundTimes>& times, WholeBlockTime whole_time) {
  require(!times.empty() && !times[0].empty() && !times[0][0].empty(),
          "the calibration's paired times need a block with a round of at least one rank");
  const std::size_t rounds = times[0].size(), ranks = times[0][0].size();
  for (std::size_t i = 0; i < times.size(); ++i) {
    require(times[i].size() == rounds, "every calibration block needs the same rounds: ", rounds, " and ",
            times[i].size());
    for (const std::vector<double>& round : times[i]) {
      require(round.size() == ranks, "every calibration round needs the same ranks: ", ranks, " and ", round.size());
      for (double t : round)
        require(std::isfinite(t) && t >= 0, "calibration block ", i, " has a time that is not a finite one >= 0: ", t);
    }
  }
  // The whole block, from the rounds that took any time: the median of every rank's rounds
  // together, or each rank's median and the slowest of them.
  std::vector<std::vector<double>> each(ranks);
  for (std::size_t k = 0; k < ranks; ++k)
    for (std::size_t r = 0; r < rounds; ++r)
      if (times[0][r][k] > 0) each[k].push_back(times[0][r][k]);
  double whole = 0;
  if (whole_time == WholeBlockTime::every_rank) {
    std::vector<double> everyone;
    for (const std::vector<double>& mine : each) everyone.insert(everyone.end(), mine.begin(), mine.end());
    whole = median(everyone);
  } else {
    for (const std::vector<double>& mine : each)
      if (!mine.empty()) whole = std::max(whole, median(mine));
  }
  require(whole > 0, "the calibration's whole block took no time in any round");
  std::vector<double> out{whole};
  for (std::size_t i = 1; i < times.size(); ++i) {
    std::vector<double> ratios;
    for (std::size_t r = 0; r < rounds; ++r)
      for (std::size_t k = 0; k < ranks; ++k)
        if (times[0][r][k] > 0) ratios.push_back(times[i][r][k] / times[0][r][k]);
    require(!ratios.empty(), "calibration block ", i, " has no round whose whole block took any time");
    out.push_back(whole * median(ratios));
  }
  return out;
}

namespace {

/// How far apart (det / (xx zz), fit_cut_tiles) the weighted equations must be for two costs.
constexpr double kApart = 0.05;

/// A cut tile's cost per score and per visible score (MachineModel::forward_masked_tile_cost,
/// forward_masked_visible_cost) from equations cost = tile x cut + seen x visible, in scores,
/// each weighted by its block's whole time in scores (`whole`): the timing noise grows with a
/// block's time, not with its cut tiles' share of it.
std::pair<double, double> fit_cut_tiles(const double cut[3], const double visible[3], const double cost[3],
                                        const double whole[3]) {
  // The normal equations [xx xz; xz zz] [tile; seen] = [xy; zy] of the weighted residuals.
  double xx = 0, xz = 0, zz = 0, xy = 0, zy = 0;
  for (int e = 0; e < 3; ++e) {
    const double w = 1.0 / (whole[e] * whole[e]), x = cut[e], z = visible[e], y = cost[e];
    xx += w * x * x;
    xz += w * x * z;
    zz += w * z * z;
    xy += w * x * y;
    zy += w * z * y;
  }
  if (!(xx > 0)) return {1.0, 0.0};  // no cut tiles: nothing to fit, whole tiles' cost
  // The equations tell the two costs apart where the blocks' cut tiles show different visible
  // shares: det / (xx zz) is 1 - cos^2 of the angle between the weighted columns. With the
  // narrow band it is 0.12-0.42 on blocks of 256-4096 rows; a causal block and a band as wide
  // as the block (the checked window at eight ranks and more) alone give 2e-4 to 1e-2, and at
  // eight ranks and more blocks of up to 64 rows, where the narrow band is most of the block,
  // 2e-2 or less.
  const double det = xx * zz - xz * xz;
  if (det > kApart * xx * zz) {
    const double tile = (zz * xy - xz * zy) / det, seen = (xx * zy - xz * xy) / det;
    if (tile >= 0 && seen >= 0) return {tile, seen};
  }
  // One cost per cut score: a cut tile always pays for its masking, the visible scores are the
  // refinement.
  return {std::max(0.0, xy / xx), 0.0};
}

}  // namespace

void fit_kernels(model::MachineModel& m, const std::vector<CalibrationBlock>& blocks,
                 const std::vector<std::pair<double, double>>& seconds) {
  require(blocks.size() == kCalibrationBlocks && seconds.size() == blocks.size(), "the kernels' fit takes the ",
          std::size_t(kCalibrationBlocks), " calibration blocks' times (calibration_blocks), got ", seconds.size(),
          " times of ", blocks.size(), " blocks");
  for (std::size_t i = 0; i < seconds.size(); ++i)
    require(std::isfinite(seconds[i].first) && seconds[i].first > 0 && std::isfinite(seconds[i].second) &&
                seconds[i].second > 0,
            "calibration block ", i, "'s times must be finite and above 0, got ", seconds[i].first, " and ",
            seconds[i].second);
  const engine::AttentionConfig& block = blocks[kWholeBlock].config;
  // time = scores x FLOPs per score (2 (d + dv) forward, 6 d + 4 dv backward) / rate
  //        + rows x row_seconds, per head, for L and L/2: solved exactly; a cost per row below 0
  // or leaving nothing for the scores is taken as 0.
  const double heads = double(block.batch * block.heads), L = double(block.seq_total),
               half = double(blocks[kHalfBlock].config.seq_total);
  const double flops_per_head_score[2] = {flops_per_score(double(block.head_dim), double(block.dv()), false),
                                          flops_per_score(double(block.head_dim), double(block.dv()), true)};
  for (int pass = 0; pass < 2; ++pass) {
    const double t1 = pass == 0 ? seconds[kWholeBlock].first : seconds[kWholeBlock].second;
    const double t2 = pass == 0 ? seconds[kHalfBlock].first : seconds[kHalfBlock].second;
    const double flops1 = flops_per_head_score[pass] * heads * L * L;
    const double flops2 = flops_per_head_score[pass] * heads * half * half;
    // t1 = flops1 / rate + heads L row, t2 = flops2 / rate + heads half row
    double row = (t2 * flops1 - t1 * flops2) / (heads * (half * flops1 - L * flops2));
    // Noise can leave no time for the scores (the half block at least half as long): then the
    // rows are taken to cost nothing too.
    if (!(row > 0) || !(t1 - heads * L * row > 0)) row = 0;
    const double rate = flops1 / (t1 - heads * L * row);
    (pass == 0 ? m.forward_flops_per_s : m.backward_flops_per_s) = rate;
    (pass == 0 ? m.forward_row_seconds : m.backward_row_seconds) = row;
  }
  m.packed_head_forward_speedup = seconds[kWholeBlock].first / seconds[kPackedCalls].first;
  m.packed_head_backward_speedup = seconds[kWholeBlock].second / seconds[kPackedCalls].second;
  const PositionMap rows = PositionMap::contiguous(0, block.seq_total);
  const std::size_t masked[3] = {kCausalBlock, kCheckedWindowBlock, kNarrowWindowBlock};
  for (int pass = 0; pass < 2; ++pass) {
    const double row = pass == 0 ? m.forward_row_seconds : m.backward_row_seconds;
    const double rate = pass == 0 ? m.forward_flops_per_s : m.backward_flops_per_s;
    const double per_score = flops_per_head_score[pass] * heads;  // FLOPs per score over every head
    // Each masked block's cut scores, the visible ones among them, what they cost in whole
    // tiles' scores once its whole tiles and its rows (MachineModel::forward_row_seconds) are
    // taken off, and its whole time in scores.
    double cut[3], visible[3], cost[3], whole[3];
    for (int e = 0; e < 3; ++e) {
      const kernels::MaskRule rule{true, blocks[masked[e]].config.window, nullptr, 0, {}};
      const kernels::TileWork w =
          kernels::count_tile_work(rule, rows, rows, pass == 0 ? m.forward_tile : m.backward_tile);
      const double t = pass == 0 ? seconds[masked[e]].first : seconds[masked[e]].second;
      cut[e] = w.partial;
      visible[e] = w.partial_visible;
      whole[e] = t * rate / per_score;
      cost[e] = (t - heads * (w.rows + w.keys) / 2 * row) * rate / per_score - w.full;
    }
    const auto [tile, seen] = fit_cut_tiles(cut, visible, cost, whole);
    (pass == 0 ? m.forward_masked_tile_cost : m.backward_masked_tile_cost) = tile;
    (pass == 0 ? m.forward_masked_visible_cost : m.backward_masked_visible_cost) = seen;
  }
}

}  // namespace perf
}  // namespace rfa
