// SPDX-License-Identifier: BSD-3-Clause
// The document boundaries of a CUDA context, and with per-sequence documents their offsets, in
// device memory (docs/architecture.md §4): the engines classify steps and tiles with the host
// copies in AttentionConfig and hand these to the kernels (CudaBlockCompute). Made once per
// engine, at creation.
#pragma once

#include "engine/engine_backends.hpp"

#if RFA_ENGINE_CUDA

#include <cstdint>

#include "comm/communicator.hpp"
#include "engine/attention_config.hpp"

namespace rfa {
namespace engine {

/// What CudaBlockCompute hands the kernels: device addresses of the boundaries and of the
/// per-sequence offsets (nullptr: none).
struct DeviceDocumentPointers {
  const std::int64_t* bounds = nullptr;
  const std::int64_t* offsets = nullptr;
};

/// The device copies of a config's document boundaries and offsets (empty views where the config
/// has none).
struct DeviceDocuments {
  Kokkos::View<std::int64_t*, Kokkos::CudaSpace> bounds, offsets;
  DeviceDocumentPointers pointers() const {
    return {bounds.size() == 0 ? nullptr : bounds.data(), offsets.size() == 0 ? nullptr : offsets.data()};
  }
};

/// c.doc_bounds and c.doc_offsets copied to the current device. Collective over `agreement`: a
/// rank whose device cannot take the copies fails every rank with RFA_ERROR_CUDA.
DeviceDocuments copy_documents_to_device(comm::Communicator& agreement, const AttentionConfig& c);

}  // namespace engine
}  // namespace rfa

#endif  // RFA_ENGINE_CUDA
