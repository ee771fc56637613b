// SPDX-License-Identifier: BSD-3-Clause
// Host-side launch plumbing shared by the flash kernels: the (dtype, head_dim) dispatch to a
// template instantiation, and a launch that first raises the dynamic shared-memory limit.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <type_traits>

#include "kernel_args.hpp"

namespace rfa_cuda {
namespace detail {

// Calls launch(T{}, std::integral_constant<int, D>{}) for the element type and head dim.
template <typename Launch>
cudaError_t dispatch_dtype_head_dim(ElementType dtype, int head_dim, Launch&& launch) {
  using D64 = std::integral_constant<int, 64>;
  using D128 = std::integral_constant<int, 128>;
  const bool bf16 = dtype == ElementType::kBf16;
  switch (head_dim) {
    case 64: return bf16 ? launch(__nv_bfloat16{}, D64{}) : launch(__half{}, D64{});
    case 128: return bf16 ? launch(__nv_bfloat16{}, D128{}) : launch(__half{}, D128{});
    default: return cudaErrorInvalidValue;  // rejected earlier by the API with a message
  }
}

// One CTA per tile; kernels above 48 KB of shared memory must opt in first.
template <typename Args>
cudaError_t launch_tiles(void (*kernel)(Args), const Args& args, std::int64_t blocks, int threads, int shared_bytes,
                         cudaStream_t stream) {
  const cudaError_t status = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, shared_bytes);
  if (status != cudaSuccess) return status;
  if (blocks > 0x7fffffff) return cudaErrorInvalidConfiguration;
  kernel<<<static_cast<unsigned>(blocks), threads, shared_bytes, stream>>>(args);
  return cudaGetLastError();
}

}  // namespace detail
}  // namespace rfa_cuda
