// SPDX-License-Identifier: BSD-3-Clause
// A block's kernel params (kernels::AttentionParams, host copies of the mask) as the CUDA
// kernels' problem (rfa_cuda_attention_shape, the mask in device memory). Host code that needs
// only kernels_cuda's C header: the CUDA block compute calls it on every launch, and a host
// test (tests/cuda/engine_shape_on_host_test.cpp) reads its shapes the way the kernels do.
#pragma once

#include <cstdint>

#include "kernels/flash_attention.hpp"
#include "rfa_cuda/flash.h"

namespace rfa {
namespace engine {

/// What CudaBlockCompute hands the kernels: device addresses (nullptr: none) of the document
/// boundaries, the per-sequence offsets, and the range index's arrays (as
/// rfa_cuda_attention_shape's range_* fields: entries 6 values each).
struct DeviceMaskPointers {
  const std::int64_t* doc_bounds = nullptr;
  const std::int64_t* doc_offsets = nullptr;
  const std::int64_t* range_band_begin = nullptr;
  const std::int64_t* range_band_end = nullptr;
  const std::int64_t* range_band_offset = nullptr;
  const std::int64_t* range_entries = nullptr;
};

/// The kernels' name of a storage dtype.
rfa_cuda_dtype cuda_dtype(rfa_dtype_t dtype);

/// A position map of at most two segments as the kernels take it; throws RFA_ERROR_INTERNAL for
/// more (validate_local refuses such layouts on CUDA contexts).
rfa_cuda_position_map cuda_positions(const PositionMap& m);

/// p's shape, scale, soft cap, positions and mask in `dtype`, its documents and ranges at the
/// device copies in `mask` (the same lists as p's host copies); throws RFA_ERROR_INTERNAL where
/// p has documents or ranges and `mask` lacks their copy.
rfa_cuda_attention_shape cuda_attention_shape(const kernels::AttentionParams& p, rfa_cuda_dtype dtype,
                                              const DeviceMaskPointers& mask);

}  // namespace engine
}  // namespace rfa
