// SPDX-License-Identifier: BSD-3-Clause
// Global token positions and the causal mask as the kernels see them: a position map
// flattened to two affine pieces, and the classification of a (query tile, key tile) pair
// as skipped, partially masked or fully visible.
#pragma once

#include <cstdint>

namespace rfa_cuda {
namespace detail {

// Local row i maps to start0 + i*stride0 while i < length0, then to
// start1 + (i - length0)*stride1. The identity map is (0, 1, INT64_MAX).
struct DevicePositions {
  std::int64_t start0, stride0, length0, start1, stride1;

  __host__ __device__ std::int64_t at(std::int64_t i) const {
    return i < length0 ? start0 + i * stride0 : start1 + (i - length0) * stride1;
  }
  // Strides are >= 1, so each segment is increasing; over rows [first, last] the extremes
  // sit at the ends of the range or at the segment boundary inside it.
  __device__ std::int64_t min_over(std::int64_t first, std::int64_t last) const {
    const std::int64_t a = at(first);
    if (first < length0 && last >= length0) {
      const std::int64_t b = start1;
      return a < b ? a : b;
    }
    return a;
  }
  __device__ std::int64_t max_over(std::int64_t first, std::int64_t last) const {
    const std::int64_t a = at(last);
    if (first < length0 && last >= length0) {
      const std::int64_t b = at(length0 - 1);
      return a > b ? a : b;
    }
    return a;
  }
};

enum class TileKind { kSkip, kPartial, kFull };

// Query rows [q_first, q_first + q_rows) against key rows [k_first, k_first + k_rows), with
// sequence lengths seq_q, seq_k. A tile is skipped when the mask hides all of it, and
// "full" (no per-element mask) only when every row and column is inside its sequence too.
__device__ __forceinline__ TileKind classify_tile(bool causal, const DevicePositions& qpos,
                                                  const DevicePositions& kpos, int q_first,
                                                  int q_rows, int seq_q, int k_first, int k_rows,
                                                  int seq_k) {
  const int q_last = min(q_first + q_rows, seq_q) - 1;
  const int k_last = min(k_first + k_rows, seq_k) - 1;
  if (q_last < q_first || k_last < k_first) return TileKind::kSkip;
  const bool in_bounds = q_first + q_rows <= seq_q && k_first + k_rows <= seq_k;
  if (!causal) return in_bounds ? TileKind::kFull : TileKind::kPartial;
  if (kpos.min_over(k_first, k_last) > qpos.max_over(q_first, q_last)) return TileKind::kSkip;
  if (in_bounds && kpos.max_over(k_first, k_last) <= qpos.min_over(q_first, q_last))
    return TileKind::kFull;
  return TileKind::kPartial;
}

// Per-element visibility inside a partial tile (indices are local rows).
__device__ __forceinline__ bool visible(bool causal, const DevicePositions& qpos,
                                        const DevicePositions& kpos, int q, int seq_q, int k,
                                        int seq_k) {
  if (q >= seq_q || k >= seq_k) return false;
  return !causal || kpos.at(k) <= qpos.at(q);
}

}  // namespace detail
}  // namespace rfa_cuda
