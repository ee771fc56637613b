// SPDX-License-Identifier: BSD-3-Clause
#include "engine/engine_state.hpp"

#include "core/error.hpp"

#if RFA_ENGINE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace rfa {
namespace engine {

std::int64_t EngineState::held_workspace_bytes() const {
  std::int64_t n = host_arena_ == &host_workspace_ ? host_workspace_.held_bytes() : 0;  // a shared one: its owner's
#if RFA_ENGINE_CUDA
  n += device_cache_.held_bytes();
#endif
  return n;
}

void EngineState::release_workspace() {
  host_arena_->release();
#if RFA_ENGINE_CUDA
  if (device_cache_.held_bytes() > 0) {
    const cudaError_t e = cudaStreamSynchronize(static_cast<cudaStream_t>(cuda_stream_));
    if (e != cudaSuccess) {
      cudaGetLastError();
      fail(RFA_ERROR_CUDA, "releasing the device workspace: the context's stream reported ", cudaGetErrorName(e), ": ",
           cudaGetErrorString(e));
    }
    device_cache_.release();
  }
#endif
}

}  // namespace engine
}  // namespace rfa
