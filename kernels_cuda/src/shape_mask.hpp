// SPDX-License-Identifier: BSD-3-Clause
// The mask and the position maps of an rfa_cuda_attention_shape as the kernels take them
// (attention_mask.cuh). Host code without CUDA calls: flash_api.cu's check_shape uses it after
// validating the shape, and the host test of the engine's shapes (tests/cuda) reads a shape
// the same way.
#pragma once

#include <cstdint>

#include "attention_mask.cuh"
#include "rfa_cuda/flash.h"

namespace rfa_cuda {
namespace detail {

/// A position map of 0 (the identity), 1 or 2 segments, its strides and lengths already checked.
inline DevicePositions device_positions(const rfa_cuda_position_map& map) {
  if (map.count == 0) return DevicePositions::one(0, 1);
  const rfa_cuda_segment& a = map.seg[0];
  const rfa_cuda_segment& b = map.seg[map.count == 2 ? 1 : 0];
  return map.count == 2 ? DevicePositions::two(a.start, a.stride, a.length, b.start, b.stride)
                        : DevicePositions::one(a.start, a.stride);
}

/// The causal flag, window, documents (with their per-sequence offsets) and range index of a
/// checked shape; the ranges count only with s.ranges set.
inline DeviceMask device_mask(const rfa_cuda_attention_shape& s) {
  const bool ranges = s.ranges != 0;
  return DeviceMask{s.mask == RFA_CUDA_MASK_CAUSAL,
                    s.window,
                    s.doc_bounds,
                    s.doc_bound_count,
                    DeviceRanges{ranges, s.range_band_begin, s.range_band_end, s.range_band_offset, s.range_entries,
                                 ranges ? s.range_band_count : 0},
                    s.doc_offsets};
}

}  // namespace detail
}  // namespace rfa_cuda
