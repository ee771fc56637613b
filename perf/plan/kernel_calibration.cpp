// SPDX-License-Identifier: BSD-3-Clause
#include "kernel_calibration.hpp"

#include <algorithm>
#include <cstddef>

#include "attention_work.hpp"
#include "core/error.hpp"
#include "core/positions.hpp"
#include "kernels/tile_work.hpp"
#include "result_json.hpp"

namespace rfa {
namespace perf {

std::vector<CalibrationBlock> calibration_blocks(const engine::AttentionConfig& block, std::int64_t seq) {
  // Calls over one K/V head (with its query heads) on packed rows, as the all-gather makes
  // them: one such call per K/V head, the same scores as the interleaved heads in as long a run
  // (calls much shorter than the others would be timed differently on shared cores). The
  // windowed block's band cut as the checked problems' (S/8) are; the narrow band's a third of
  // a host forward tile's keys wide, so that most of each tile it cuts is hidden.
  std::vector<CalibrationBlock> blocks(kCalibrationBlocks, CalibrationBlock{block, 1});
  blocks[1].config.seq_total = block.seq_total / 2;
  blocks[2].calls = int(block.kv_heads);
  blocks[2].config.heads = block.heads / block.kv_heads;
  blocks[2].config.kv_heads = 1;
  const std::int64_t windows[3] = {0, seq / 8, kernels::kHostForwardTile.k / 3};
  for (std::size_t e = 0; e < 3; ++e) {
    engine::AttentionConfig& masked = blocks[3 + e].config;
    masked.mask = RFA_MASK_CAUSAL;
    masked.window = e == 0 ? 0 : std::max<std::int64_t>(1, std::min<std::int64_t>(windows[e], block.seq_total - 1));
  }
  return blocks;
}

std::vector<double> paired_seconds(const std::vector<RoundTimes>& times) {
  require(!times.empty() && !times[0].empty() && !times[0][0].empty(),
          "the calibration's paired times need a block with a round of at least one rank");
  const std::size_t rounds = times[0].size(), ranks = times[0][0].size();
  for (const RoundTimes& block : times) {
    require(block.size() == rounds, "every calibration block needs the same rounds: ", rounds, " and ", block.size());
    for (const std::vector<double>& round : block)
      require(round.size() == ranks, "every calibration round needs the same ranks: ", ranks, " and ", round.size());
  }
  // The whole block: each rank's median over the rounds, the slowest of them.
  double whole = 0;
  for (std::size_t k = 0; k < ranks; ++k) {
    std::vector<double> mine;
    for (std::size_t r = 0; r < rounds; ++r) mine.push_back(times[0][r][k]);
    whole = std::max(whole, median(mine));
  }
  std::vector<double> out{whole};
  for (std::size_t i = 1; i < times.size(); ++i) {
    std::vector<double> ratios;
    for (std::size_t r = 0; r < rounds; ++r)
      for (std::size_t k = 0; k < ranks; ++k) ratios.push_back(times[i][r][k] / std::max(times[0][r][k], 1e-12));
    out.push_back(whole * median(ratios));
  }
  return out;
}

void fit_kernels(model::MachineModel& m, const engine::AttentionConfig& block,
                 const std::vector<CalibrationBlock>& blocks, const std::vector<std::pair<double, double>>& seconds) {
  require(blocks.size() == kCalibrationBlocks && seconds.size() == blocks.size(), "the kernels' fit takes the ",
          kCalibrationBlocks, " calibration blocks' times (calibration_blocks), got ", seconds.size(), " times of ",
          blocks.size(), " blocks");
  // time = scores x FLOPs per score (4 d forward, 10 d backward; 2 (d + dv) and 6 d + 4 dv with
  // V's own head dim) / rate + rows x row_seconds, per head, for L and L/2:
  // solved exactly; a cost per row below 0 or leaving nothing for the scores is taken as 0.
  const double heads = double(block.batch * block.heads), L = double(block.seq_total),
               half = double(block.seq_total / 2);
  // FLOPs per score and head, forward and backward
  const double fpf[2] = {flops_per_score(double(block.head_dim), double(block.dv()), false),
                         flops_per_score(double(block.head_dim), double(block.dv()), true)};
  for (int pass = 0; pass < 2; ++pass) {
    const double t1 = pass == 0 ? seconds[0].first : seconds[0].second;
    const double t2 = pass == 0 ? seconds[1].first : seconds[1].second;
    const double flops1 = fpf[pass] * heads * L * L;
    const double flops2 = fpf[pass] * heads * half * half;
    // t1 = flops1 / rate + heads L row, t2 = flops2 / rate + heads half row
    double row = (t2 * flops1 - t1 * flops2) / (heads * (half * flops1 - L * flops2));
    // Noise can leave no time for the scores (the half block at least half as long): then the
    // rows are taken to cost nothing too.
    if (!(row > 0) || !(t1 - heads * L * row > 0)) row = 0;
    const double rate = flops1 / (t1 - heads * L * row);
    (pass == 0 ? m.forward_flops_per_s : m.backward_flops_per_s) = rate;
    (pass == 0 ? m.forward_row_seconds : m.backward_row_seconds) = row;
  }
  const auto [f, b] = seconds[0];
  m.packed_head_forward_speedup = f / seconds[2].first;
  m.packed_head_backward_speedup = b / seconds[2].second;
  const PositionMap rows = PositionMap::contiguous(0, block.seq_total);
  const double per_score[2] = {fpf[0] * heads, fpf[1] * heads};  // FLOPs per score over every head
  // [pass][equation]: a masked block's cut scores, the visible ones among them, and what they
  // cost in whole tiles' scores.
  double cut[2][3], visible[2][3], cost[2][3];
  for (std::size_t e = 0; e < 3; ++e) {
    const auto [fm, bm] = seconds[3 + e];
    const kernels::MaskRule rule{true, blocks[3 + e].config.window, nullptr, 0, {}};
    for (int pass = 0; pass < 2; ++pass) {
      const kernels::TileWork w =
          kernels::count_tile_work(rule, rows, rows, pass == 0 ? m.forward_tile : m.backward_tile);
      // What the rows cost (MachineModel::forward_row_seconds) comes off first.
      const double row = pass == 0 ? m.forward_row_seconds : m.backward_row_seconds;
      const double rate = pass == 0 ? m.forward_flops_per_s : m.backward_flops_per_s;
      cut[pass][e] = w.partial;
      visible[pass][e] = w.partial_visible;
      cost[pass][e] = ((pass == 0 ? fm : bm) - heads * (w.rows + w.keys) / 2 * row) * rate / per_score[pass] - w.full;
    }
  }
  // A cut tile's cost per score and per visible score, fitted to the three equations, each to
  // its relative error. The diagonal's and the checked band's edges show about the same visible
  // share, and alone they leave the two costs ill-posed (their exact solution swung from 0 to
  // 2.4 per visible score between runs of one build); the narrow band, mostly hidden, tells
  // them apart. A fit with a cost below 0 falls back to one cost per cut score.
  for (int pass = 0; pass < 2; ++pass) {
    // The normal equations [xx xz; xz zz] [tile; seen] = [xy; zy], each equation over its cost.
    double xx = 0, xz = 0, zz = 0, xy = 0, zy = 0;
    for (int e = 0; e < 3; ++e) {
      const double y = cost[pass][e], x = cut[pass][e], z = visible[pass][e];
      if (!(y > 0)) continue;  // a block measured faster than its whole tiles: noise, left out
      xx += x * x / (y * y);
      xz += x * z / (y * y);
      zz += z * z / (y * y);
      xy += x / y;
      zy += z / y;
    }
    const double det = xx * zz - xz * xz;
    double tile = (zz * xy - xz * zy) / det, seen = (xx * zy - xz * xy) / det;
    if (!(det > 1e-12 * xx * zz) || !(tile >= 0) || !(seen >= 0)) {
      tile = xx > 0 ? xy / xx : 1.0;
      seen = 0.0;
    }
    (pass == 0 ? m.forward_masked_tile_cost : m.backward_masked_tile_cost) = std::max(0.0, tile);
    (pass == 0 ? m.forward_masked_visible_cost : m.backward_masked_visible_cost) = seen;
  }
}

}  // namespace perf
}  // namespace rfa
