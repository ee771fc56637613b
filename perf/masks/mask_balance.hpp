// SPDX-License-Identifier: BSD-3-Clause
// How evenly the fixed layouts spread the work of masks given as ranges over P ranks, and how
// much K/V the ring moves against what the ranks' queries see (counts from the mask, no
// attention run): the baseline a balanced placement and a needed-only exchange must beat
// (docs/masks.md).
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/mask_ranges.hpp"
#include "core/positions.hpp"
#include "engine/placement_refinement.hpp"
#include "rfa/rfa.h"

namespace rfa {
namespace perf {

/// A mask family's list for a sequence of `seq` tokens.
struct MaskFamily {
  std::string name;
  std::vector<rfa_mask_range_t> ranges;
};

/// The families of the benchmark over `seq` tokens (a multiple of 256): causal (for scale),
/// skewed causal documents (log-normal lengths, median seq / 64), prefix-LM (prefix seq / 4),
/// block-causal (blocks of seq / 64), a 2-D neighbourhood of radius 8 on a 256-wide grid in
/// row-major order, and random sparse (seq / 256 random full rectangles, sides up to seq / 16).
std::vector<MaskFamily> mask_families(std::int64_t seq, std::mt19937_64& rng);

/// A mask over `seq` tokens, validated and indexed once, with every query's visible keys found
/// once (every placement and P of a family counts from these).
struct MaskPairs {
  MaskPairs(const std::vector<rfa_mask_range_t>& ranges, std::int64_t seq);
  std::int64_t seq;
  std::shared_ptr<const MaskRanges> ranges;
  /// Query q's visible keys: the intervals [first, last] spans[begin[q]] .. spans[begin[q + 1] - 1].
  std::vector<std::int64_t> begin;
  std::vector<std::pair<std::int64_t, std::int64_t>> spans;
  /// The number of keys query q sees.
  double pairs(std::int64_t q) const;
};

/// Which rows each of P ranks holds: per rank, its segments of global positions in local order
/// (a fixed layout's position map, or the chunks a placement assigns).
using Placement = std::vector<std::vector<Segment>>;

/// A rank's segments as a position map, adjacent ones merged: its rows in local order, as the
/// kernels tile them (at most PositionMap::kMaxSegments, which every placement here keeps to).
PositionMap as_map(const std::vector<Segment>& segments);

/// A family's name as a file stem: "2-D neighbourhood" -> "2-d-neighbourhood".
std::string family_stem(const std::string& family);

/// The fixed layout's rows on `ranks` ranks.
Placement layout_placement(rfa_layout_t layout, std::int64_t seq, int ranks);

/// The balanced layout's placement of `mask` on `ranks` ranks (RFA_LAYOUT_BALANCED, solved
/// by engine::solve_balanced_placement): 8P chunks placed by their visible pairs and, with
/// `refined`, then swapped until the ranks' computed tiles are even too (`report`, optional,
/// says what the refinement did); without, the chunks as the pairs alone place them.
Placement balanced_placement(const MaskPairs& mask, int ranks, bool refined,
                             engine::RefinementReport* report = nullptr);

/// One placement at one P: the work and the K/V rows each rank receives.
struct PlacementCounts {
  double work_max_over_mean = 1;  ///< visible pairs of the busiest rank / the mean
  /// The scores the host kernels compute (their 192 x 96 tiles the mask does not hide, over the
  /// ring steps a rank computes on; kernels/tile_work.hpp): the busiest rank's over the mean, and
  /// all ranks' over the visible pairs (what tiling costs beyond the mask).
  double tiles_max_over_mean = 1, computed_over_visible = 1;
  /// The same busiest rank's share for the backward's tiles (96 x 192).
  double backward_tiles_max_over_mean = 1;
  /// Ring steps some rank computes on (of P): exactly (some rank sees a key of the block that
  /// started that many positions upstream), and as the engine's ring_steps_with_work() finds
  /// them from position ranges (fixed layouts only; 0 otherwise), never fewer.
  int ring_steps = 0, engine_ring_steps = 0;
  /// K/V rows the busiest rank receives in a forward: the ring's (steps - 1 blocks), and what
  /// its queries see outside its own rows (a needed-only exchange's floor).
  std::int64_t ring_rows = 0, seen_rows = 0;
  /// Fixed layouts: the K/V rows the busiest rank receives in the needed-only exchange
  /// (engine/needed_kv_plan.hpp), and the largest ratio over the ranks of those rows to the
  /// rows its queries see (1 where it sees none); 0 otherwise.
  std::int64_t needed_rows = 0;
  double needed_over_seen = 0;
};

/// The counts of `mask` with `placement`. Tiles are counted as the kernels tile a rank's rows:
/// in local order across its segments (a balanced placement's tiles straddle its chunks' edges).
/// `layout`: the fixed layout the placement is, for the engine's step count (nullptr: none).
PlacementCounts placement_counts(const MaskPairs& mask, const Placement& placement, const rfa_layout_t* layout);

}  // namespace perf
}  // namespace rfa
