// SPDX-License-Identifier: BSD-3-Clause
// The balanced layout's second step (docs/masks.md, "Balanced placement"): the chunks placed by
// their visible pairs (layout/chunk_placement.hpp), then swapped between ranks until the tiles
// the kernels compute are even too. A rank's kernels tile its rows across its chunks' edges, so
// which chunks sit next to each other in its rows changes its tiles, and no weight per chunk
// says what a rank will compute: each swap is judged on the tiles of the whole rank maps
// (kernels/tile_work.hpp), as the kernels classify them.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/tile_visibility.hpp"
#include "kernels/tile_work.hpp"
#include "layout/chunk_placement.hpp"

namespace rfa {
namespace engine {

/// One mask rule of the placement's work and how many batch entries follow it.
struct WeightedRule {
  kernels::MaskRule rule;
  double weight = 1;
};

/// What the refinement evens and how much it may count.
struct RefinementInputs {
  /// The visible pairs of each chunk (the work place_chunks_by_work placed them by).
  std::vector<double> chunk_pairs;
  /// The rules whose tiles are counted, each weighted by its entries.
  std::vector<WeightedRule> rules;
  std::int64_t seq_len = 0;
  kernels::TileShape forward = kernels::kHostForwardTile, backward = kernels::kHostBackwardTile;
  /// The most operations of the tile count (kernels::computed_scores) the refinement may spend:
  /// a bound on its time that is the same on every rank. It stops where the next swap would
  /// pass it; where counting the start passes it, it returns the start unchanged.
  double operation_budget = kDefaultOperationBudget;

  /// Half a second to under two seconds of counting on one core at S = 65536, P = 64
  /// (perf/RESULTS.md, "2026-11-30 (morning) — the balanced layout's placement refined on whole
  /// rank maps, and tiles classified segment by segment").
  static constexpr double kDefaultOperationBudget = 2e8;
};

/// What a refinement did.
struct RefinementReport {
  int swaps = 0;          ///< swaps kept (from both starts)
  int tried = 0;          ///< swaps counted (from both starts)
  double operations = 0;  ///< operations of the tile count spent
  bool out_of_budget = false;
  bool second_start = false;  ///< the placement kept is the second start's
  /// The busiest rank's load (what the refinement lowers), before and after.
  double load_before = 1, load_after = 1;
  /// The busiest rank's share of each measure, before and after: its work over the mean
  /// (pairs; forward and backward computed scores).
  double pairs_before = 1, forward_before = 1, backward_before = 1;
  double pairs_after = 1, forward_after = 1, backward_after = 1;
};

/// `start` (each rank's chunk indices, ascending; `inputs.chunk_pairs` per chunk) improved by
/// swaps of one chunk of the busiest rank for one of another rank's. A rank's load is the
/// largest of its shares of the three measures (its visible pairs, forward computed scores and
/// backward computed scores, each over the ranks' mean). Each step orders the busiest rank's
/// swaps by an estimate per chunk (its pairs, and its queries' scores against the whole
/// sequence), counts them exactly on whole rank maps in batches of 32, and keeps the best of
/// the first batch that holds progress: a swap that leaves no rank's load above today's
/// busiest, raises no rank's work above today's busiest work (each measure over the start's
/// mean: evening never costs the busiest rank time), keeps every rank's share of the visible
/// pairs within 1.05 (or the start's), and lowers the sum of the loads' 16th powers. It stops
/// when four batches hold none, after four swaps per chunk, or at the budget; where counting
/// one block says the start alone would spend half the budget, it counts nothing more. Where it
/// stops with the busiest share above 1.05 and budget left, a second start places the chunks by
/// their estimates of all three measures at once (layout::place_chunks_by_measures), is refined
/// the same way with the rest of the budget, and is kept where its busiest share is lower and
/// its busiest rank computes no more tiles (`report->second_start`). Deterministic, no
/// communication: the same on every rank for the same inputs. Every rank keeps as many chunks
/// as it started with, in ascending order.
layout::ChunkPlacement refine_placement(layout::ChunkPlacement start, const RefinementInputs& inputs,
                                        RefinementReport* report = nullptr);

}  // namespace engine
}  // namespace rfa
