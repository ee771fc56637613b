// SPDX-License-Identifier: BSD-3-Clause
// The document boundaries of a CUDA context in device memory (docs/architecture.md §4): the
// engines classify steps and tiles with the host copy in AttentionConfig::doc_bounds and hand this
// one to the kernels (CudaBlockCompute). Made once per engine, at creation.
#pragma once

#include "engine/engine_backends.hpp"

#if RFA_ENGINE_CUDA

#include <cstdint>
#include <vector>

#include "comm/communicator.hpp"

namespace rfa {
namespace engine {

/// `bounds` copied to the current device (empty without documents). Collective over
/// `agreement`: a rank whose device cannot take the copy fails every rank with RFA_ERROR_CUDA.
Kokkos::View<std::int64_t*, Kokkos::CudaSpace> copy_doc_bounds_to_device(comm::Communicator& agreement,
                                                                         const std::vector<std::int64_t>& bounds);

/// The copy's data, or nullptr without documents (what CudaBlockCompute takes).
inline const std::int64_t* doc_bounds_or_null(const Kokkos::View<std::int64_t*, Kokkos::CudaSpace>& bounds) {
  return bounds.size() == 0 ? nullptr : bounds.data();
}

}  // namespace engine
}  // namespace rfa

#endif  // RFA_ENGINE_CUDA
