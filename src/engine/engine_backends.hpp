// SPDX-License-Identifier: BSD-3-Clause
// Which places the engine can run in this build (docs/architecture.md §8): always the host;
// the CUDA devices too when Kokkos was built with its CUDA backend (then the engine's device
// buffers are Views in Kokkos::CudaSpace and kernels_cuda computes the blocks).
#pragma once

#include <Kokkos_Core.hpp>

#if defined(KOKKOS_ENABLE_CUDA)
#define RFA_ENGINE_CUDA 1
#else
#define RFA_ENGINE_CUDA 0
#endif

namespace rfa {
namespace engine {

/// Where a context's tensors live and its blocks are computed.
enum class Device { host, cuda };

/// Whether this build's engine can run on `device`.
constexpr bool engine_supports(Device device) { return device == Device::host || RFA_ENGINE_CUDA; }

}  // namespace engine
}  // namespace rfa
