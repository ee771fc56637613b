// SPDX-License-Identifier: BSD-3-Clause
// Which places the engine can run in this build (docs/architecture.md §8): always the host;
// the CUDA devices too when Kokkos was built with its CUDA backend (then the engine's device
// buffers are Views in Kokkos::CudaSpace and kernels_cuda computes the blocks).
#pragma once

#include <Kokkos_Core.hpp>
#include <optional>

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

#if RFA_ENGINE_CUDA
/// The Kokkos::Cuda instance an engine queues its own kernels on (the packing around the
/// collectives), on the context's stream: made once per stream and kept, since making one
/// allocates and ending one frees (which synchronizes the device).
class StreamExec {
 public:
  /// On `stream`; nullptr is the legacy default stream itself (cudaStreamLegacy), not Kokkos'
  /// default instance: a cudaStreamSynchronize of the context's stream (the CUDA-aware
  /// transport, rfa_context_synchronize) must wait for these kernels too.
  const Kokkos::Cuda& on(void* stream) {
    if (!exec_ || stream != stream_) {
      exec_.emplace(stream == nullptr ? cudaStreamLegacy : static_cast<cudaStream_t>(stream));
      stream_ = stream;
    }
    return *exec_;
  }

 private:
  std::optional<Kokkos::Cuda> exec_;
  void* stream_ = nullptr;
};
#endif

}  // namespace engine
}  // namespace rfa
