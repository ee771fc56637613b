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
  // windowed block's band cut as the checked problems' (S/8) are.
  std::vector<CalibrationBlock> blocks = {{block, 1}, {block, 1}, {block, int(block.kv_heads)}, {block, 1}, {block, 1}};
  blocks[1].config.seq_total = block.seq_total / 2;
  blocks[2].config.heads = block.heads / block.kv_heads;
  blocks[2].config.kv_heads = 1;
  for (int e = 0; e < 2; ++e) {
    engine::AttentionConfig& masked = blocks[std::size_t(3 + e)].config;
    masked.mask = RFA_MASK_CAUSAL;
    masked.window = e == 0 ? 0 : std::max<std::int64_t>(1, std::min<std::int64_t>(seq / 8, block.seq_total - 1));
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
  require(blocks.size() == 5 && seconds.size() == blocks.size(),
          "the kernels' fit takes the 5 calibration blocks' times (calibration_blocks), got ", seconds.size(),
          " times of ", blocks.size(), " blocks");
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
  double lhs[2][2], rhs[2][2];                                   // [pass][equation]: masked scores, and what they cost
  for (int e = 0; e < 2; ++e) {
    const auto [fm, bm] = seconds[std::size_t(3 + e)];
    const kernels::MaskRule rule{true, blocks[std::size_t(3 + e)].config.window, nullptr, 0, {}};
    const kernels::TileWork wf = kernels::count_tile_work(rule, rows, rows, m.forward_tile);
    const kernels::TileWork wb = kernels::count_tile_work(rule, rows, rows, m.backward_tile);
    // What the rows cost (MachineModel::forward_row_seconds) comes off first.
    lhs[0][e] = wf.partial;
    rhs[0][e] =
        (fm - heads * (wf.rows + wf.keys) / 2 * m.forward_row_seconds) * m.forward_flops_per_s / per_score[0] - wf.full;
    lhs[1][e] = wb.partial;
    rhs[1][e] =
        (bm - heads * (wb.rows + wb.keys) / 2 * m.backward_row_seconds) * m.backward_flops_per_s / per_score[1] -
        wb.full;
  }
  // One cost per score of a masked tile, fitted to both equations, each to its relative error.
  // A second unknown per visible score would be ill-posed: the diagonal's and a band's edges
  // show about the same visible share, so the two equations are nearly parallel and their exact
  // solution swings with the noise (from 0 to 2.4 per score between runs of one build).
  for (int pass = 0; pass < 2; ++pass) {
    double num = 0, den = 0;
    for (int e = 0; e < 2; ++e) {
      const double y = rhs[pass][e], x = lhs[pass][e];
      num += x * y / (y * y);
      den += x * x / (y * y);
    }
    (pass == 0 ? m.forward_masked_tile_cost : m.backward_masked_tile_cost) = den > 0 ? std::max(0.0, num / den) : 1.0;
  }
}

}  // namespace perf
}  // namespace rfa
