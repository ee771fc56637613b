// SPDX-License-Identifier: BSD-3-Clause
// How one ring step's block is asked of cuDNN's fused attention (docs/architecture.md §8).
// cuDNN expresses a mask as a band around the top-left diagonal of a rectangular block of
// contiguous query rows and key rows: key j is visible to query i iff j <= i + right_bound
// (when set) and j > i - left_bound (when set), with right_bound >= 0 and left_bound >= 1.
// rfa's mask lives on global positions (causal: k <= q; window: q - k < w; documents). A
// block of queries and keys whose position maps are affine with one common stride (the
// contiguous, zigzag and stripe layouts) turns into at most one such band per pair of
// segments, after dropping the leading query rows or key rows that see nothing (which
// moves the diagonal into the band) and the trailing ones that see nothing. Packed documents
// are expressible only where a pair of segments lies inside one document. Fewer, larger calls
// where the mask allows: a diagonal block (queries and keys at the same increasing positions)
// under the causal mask alone is one causal band over its local rows, whatever the layout, and
// full bands side by side are one call (a zigzag step is then one call at any P). Pure host
// code: tested against the mask itself without a GPU.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rfa_cuda/flash.h"

namespace rfa_cuda {
namespace cudnn {

/// One call of cuDNN's attention: query rows [q_begin, q_begin + q_rows) and key rows
/// [k_begin, k_begin + k_rows) of the block (local indices), and the band inside it.
struct BandBlock {
  std::int64_t q_begin = 0, q_rows = 0, k_begin = 0, k_rows = 0;
  bool has_right_bound = false;
  std::int64_t right_bound = 0;  ///< >= 0: key j visible to query i only if j <= i + right_bound
  bool has_left_bound = false;
  std::int64_t left_bound = 0;  ///< >= 1: key j visible to query i only if j > i - left_bound
};

/// The cuDNN calls that compute one block exactly, or why it cannot be asked of cuDNN.
struct BandPlan {
  bool expressible = false;
  std::string why_not;            ///< set when not expressible
  std::vector<BandBlock> blocks;  ///< empty and expressible: the mask hides the whole block
};

/// The plan for `shape`'s block (its position maps, mask, window). A diagonal block under the
/// causal mask alone is one band over the whole of it. Where a position map's second
/// segment continues its first (the same stride, starting where the first ends: a zigzag rank's
/// two chunks at P = 1, or rank P-1's at any P) and taking the two as one piece makes the block
/// one band over the whole of it, that is the plan. `host_doc_bounds` is the
/// host copy of shape.doc_bounds (which may be device memory), `doc_bound_count` values.
BandPlan plan_bands(const rfa_cuda_attention_shape& shape, const std::int64_t* host_doc_bounds,
                    std::int64_t doc_bound_count);

/// Whether the plan is one band over the whole of a block of `seq_q` query rows and `seq_k` key
/// rows: cuDNN's results for it (output and statistics, or gradients) are then the block's,
/// which it may write in place (a pass of one block, nothing to merge or accumulate). Every row
/// of a band sees a key in it.
inline bool covers_whole_block(const BandPlan& plan, std::int64_t seq_q, std::int64_t seq_k) {
  if (!plan.expressible || plan.blocks.size() != 1) return false;
  const BandBlock& b = plan.blocks[0];
  return b.q_begin == 0 && b.q_rows == seq_q && b.k_begin == 0 && b.k_rows == seq_k;
}

/// Whether key column j of `b` is visible to query row i of it (i < q_rows, j < k_rows), by
/// the band's own rule: what cuDNN computes for it.
inline bool band_visible(const BandBlock& b, std::int64_t i, std::int64_t j) {
  if (b.has_right_bound && j > i + b.right_bound) return false;
  if (b.has_left_bound && j <= i - b.left_bound) return false;
  return true;
}

}  // namespace cudnn
}  // namespace rfa_cuda
