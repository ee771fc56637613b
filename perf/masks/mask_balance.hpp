// SPDX-License-Identifier: BSD-3-Clause
// How evenly the fixed layouts spread the work of masks given as ranges over P ranks, and how
// much K/V the ring moves against what the ranks' queries see (counts from the mask, no
// attention run): the baseline a balanced placement and a needed-only exchange must beat
// (docs/masks.md).
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

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

/// One layout at one P: the work and the K/V rows each rank receives.
struct PlacementCounts {
  double work_max_over_mean = 1;  ///< visible pairs of the busiest rank / the mean
  /// The scores the host kernels compute (their 192 x 96 tiles the mask does not hide, over the
  /// ring steps a rank computes on; model/tile_work.hpp): the busiest rank's over the mean, and
  /// all ranks' over the visible pairs (what tiling costs beyond the mask).
  double tiles_max_over_mean = 1, computed_over_visible = 1;
  int ring_steps = 0;  ///< ring steps some rank computes on (of P)
  /// K/V rows the busiest rank receives in a forward: the ring's (steps - 1 blocks), and what
  /// its queries see outside its own rows (a needed-only exchange's floor).
  std::int64_t ring_rows = 0, seen_rows = 0;
};

/// The counts of `ranges` over `seq` tokens with `layout` on `ranks` ranks.
PlacementCounts placement_counts(const std::vector<rfa_mask_range_t>& ranges, std::int64_t seq, rfa_layout_t layout,
                                 int ranks);

}  // namespace perf
}  // namespace rfa
