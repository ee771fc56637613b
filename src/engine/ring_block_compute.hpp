// SPDX-License-Identifier: BSD-3-Clause
// RingAttention::with_block_compute(): the ring's one dispatch on the memory space of a pass's
// tensors, to the block compute that runs there (docs/architecture.md §8). Included by the
// forward's and the backward's translation units only.
#pragma once

#include "engine/block_compute_cuda.hpp"
#include "engine/block_compute_cudnn.hpp"
#include "engine/block_compute_host.hpp"
#include "engine/ring_attention.hpp"

namespace rfa {
namespace engine {

template <class Space, class Run>
void RingAttention::with_block_compute(Run&& run) {
  if constexpr (kHostMemory<Space>) {
    HostBlockCompute blocks(host_arena());
    run(blocks);
  } else {
#if RFA_ENGINE_CUDA
    comm_.set_compute_stream(cuda_stream_);
    const auto stream = static_cast<cudaStream_t>(cuda_stream_);
#if RFA_ENGINE_CUDNN
    if (cudnn_) {
      CudnnBlockCompute blocks(stream, device_cache_, device_mask_.pointers(), *cudnn_, step_params(),
                               config_.cuda_path, direct_output());
      run(blocks);
      timings_.steps_on_cudnn = blocks.cudnn_steps();
      return;
    }
#endif
    CudaBlockCompute blocks(stream, device_cache_, device_mask_.pointers(), config_.cuda_path);
    run(blocks);
#endif
  }
}

}  // namespace engine
}  // namespace rfa
