// SPDX-License-Identifier: BSD-3-Clause
// How much work an attention pass is, counted two ways. The figure every benchmark reports
// counts the scores the mask leaves visible: each visible (query, key) pair costs 2 d FLOPs for
// Q K^T and 2 d for P V in the forward (4 d), and 2.5 times that in the backward. A throughput
// on that count can never exceed what the cores did. FlashAttention's convention (4 B S^2 H d,
// halved when causal, whatever the window or documents) is kept beside it, labelled as such,
// because the published peers are quoted in it; under a window or documents it overstates the
// work by as much as the mask hides.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

namespace rfa {
namespace perf {

/// The mask of a benchmark's problem, on global positions: causal (k <= q) or not, a sliding
/// window (q - k < window; 0: none; without causal, keys ahead stay visible) and packed
/// documents (doc_bounds: 0 = b_0 < ... < b_n = S, empty for one document) and a mask given as
/// ranges, as rfa_attention applies them.
struct MaskShape {
  std::int64_t seq = 0;
  bool causal = false;
  std::int64_t window = 0;
  std::vector<std::int64_t> doc_bounds;
  /// A mask given as ranges (RFA_MASK_RANGES), on top of the rest: how many keys of positions
  /// [first, last] it lets query q see (empty: all of them). A function, so that this header
  /// stays free of the library's types for the GPU benchmarks.
  std::function<std::int64_t(std::int64_t q, std::int64_t first, std::int64_t last)> ranges;
};

/// The (query, key) pairs `mask` leaves visible in one (batch entry, head): exact, one pass over
/// the queries.
inline double visible_scores(const MaskShape& mask) {
  std::vector<std::int64_t> bounds = mask.doc_bounds;
  if (bounds.size() < 2) bounds = {0, mask.seq};
  double visible = 0;
  for (std::size_t d = 0; d + 1 < bounds.size(); ++d) {
    const std::int64_t begin = bounds[d], end = bounds[d + 1];
    for (std::int64_t q = begin; q < end; ++q) {
      const std::int64_t first = mask.window > 0 ? std::max(begin, q - mask.window + 1) : begin;
      const std::int64_t last = mask.causal ? q : end - 1;
      if (mask.ranges)
        visible += double(first <= last ? mask.ranges(q, first, last) : 0);
      else
        visible += double(std::max<std::int64_t>(0, last - first + 1));
    }
  }
  return visible;
}

/// visible_scores() summed over `batch` entries whose masks mask_of(entry) gives: entry by entry
/// where they differ (`per_entry`: documents of their own), else `batch` times entry 0's.
template <class MaskOf>
double visible_scores_over_batch(std::int64_t batch, bool per_entry, MaskOf mask_of) {
  if (!per_entry) return double(batch) * visible_scores(mask_of(std::int64_t(0)));
  double visible = 0;
  for (std::int64_t e = 0; e < batch; ++e) visible += visible_scores(mask_of(e));
  return visible;
}

/// FLOPs per visible score and (batch entry, head): forward 2 (d + dv) (S = Q K^T and O = P V),
/// backward 6 d + 4 dv (S, dK and dQ in Q and K's head dim d; dP and dV in V's dv); with one
/// head dim 4 d and 10 d, 2.5 times the forward.
inline double flops_per_score(double head_dim, double value_dim, bool backward) {
  return backward ? 6.0 * head_dim + 4.0 * value_dim : 2.0 * (head_dim + value_dim);
}

/// FLOPs of a pass over `visible` scores per (batch entry, head), V's head dim `value_dim`.
inline double visible_flops(double batch, double heads, double head_dim, double value_dim, double visible,
                            bool backward) {
  return batch * heads * visible * flops_per_score(head_dim, value_dim, backward);
}

/// The same with one head dim: 4 d each forward, 2.5 times that backward.
inline double visible_flops(double batch, double heads, double head_dim, double visible, bool backward) {
  return visible_flops(batch, heads, head_dim, head_dim, visible, backward);
}

/// visible_flops() of `mask`.
inline double visible_flops(double batch, double heads, double head_dim, const MaskShape& mask, bool backward) {
  return visible_flops(batch, heads, head_dim, visible_scores(mask), backward);
}

/// FlashAttention's convention (docs/benchmarks.md): forward 4 B S_q S_k H d, halved when causal
/// (for S_q == S_k), windows and documents ignored; backward 2.5 times the forward; with V's head
/// dim `value_dim` other than d, flops_per_score() in place of 4 d and 10 d. Only for figures
/// labelled with the convention's name.
inline double flash_convention_flops(double batch, double seq_q, double seq_k, double heads, double head_dim,
                                     double value_dim, bool causal, bool backward) {
  double f = batch * seq_q * seq_k * heads * flops_per_score(head_dim, value_dim, backward);
  if (causal) f *= 0.5;
  return f;
}

/// The same with one head dim.
inline double flash_convention_flops(double batch, double seq_q, double seq_k, double heads, double head_dim,
                                     bool causal, bool backward) {
  return flash_convention_flops(batch, seq_q, seq_k, heads, head_dim, head_dim, causal, backward);
}

}  // namespace perf
}  // namespace rfa
