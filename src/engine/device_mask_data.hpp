// SPDX-License-Identifier: BSD-3-Clause
// What a CUDA context's mask reads from memory, in device memory (docs/architecture.md §4): the
// document boundaries, with per-sequence documents their offsets, and the index of a mask given
// as ranges. The engines classify steps and tiles with the host copies in AttentionConfig and
// hand these to the kernels (CudaBlockCompute). Made once per engine, at creation.
#pragma once

#include "engine/engine_backends.hpp"

#if RFA_ENGINE_CUDA

#include <cstdint>

#include "comm/communicator.hpp"
#include "engine/attention_config.hpp"
#include "engine/cuda_attention_shape.hpp"

namespace rfa {
namespace engine {

/// The device copies of a config's mask data (empty views where the config has none).
struct DeviceMaskData {
  Kokkos::View<std::int64_t*, Kokkos::CudaSpace> doc_bounds, doc_offsets;
  Kokkos::View<std::int64_t*, Kokkos::CudaSpace> range_band_begin, range_band_end, range_band_offset, range_entries;
  DeviceMaskPointers pointers() const;
};

/// c.doc_bounds, c.doc_offsets and c.ranges' index copied to the current device. Collective over
/// `agreement`: a rank whose device cannot take the copies fails every rank with RFA_ERROR_CUDA.
DeviceMaskData copy_mask_to_device(comm::Communicator& agreement, const AttentionConfig& c);

}  // namespace engine
}  // namespace rfa

#endif  // RFA_ENGINE_CUDA
