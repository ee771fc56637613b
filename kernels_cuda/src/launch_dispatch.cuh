// SPDX-License-Identifier: BSD-3-Clause
// Host-side launch plumbing shared by the flash kernels: the (dtype, head_dim) dispatch to a
// template instantiation of the head dims a kernel family takes, and a launch that first raises
// the dynamic shared-memory limit.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <type_traits>

#include "kernel_args.hpp"

namespace rfa_cuda {
namespace detail {

// A set of head dims a family of kernels is instantiated for.
template <int... kDims>
struct HeadDims {};
// The sm_80 kernels' and the Hopper kernels' (flash_api.cu refuses the others by name).
using Sm80HeadDims = HeadDims<64, 128, 256>;
using Sm90HeadDims = HeadDims<64, 128>;

template <int... kDims>
constexpr bool takes_head_dim(HeadDims<kDims...>, std::int64_t head_dim) {
  return ((head_dim == kDims) || ...);
}

// Calls launch(T{}, std::integral_constant<int, D>{}) for the element type and the head dim,
// which must be one of kDims (the API refuses the others first, with a message).
template <int... kDims, typename Launch>
cudaError_t dispatch_dtype_head_dim(HeadDims<kDims...>, ElementType dtype, int head_dim, Launch&& launch) {
  const bool bf16 = dtype == ElementType::kBf16;
  cudaError_t status = cudaErrorInvalidValue;
  const auto try_dim = [&](auto dim) {
    if (head_dim != decltype(dim)::value) return false;
    status = bf16 ? launch(__nv_bfloat16{}, dim) : launch(__half{}, dim);
    return true;
  };
  (void)(try_dim(std::integral_constant<int, kDims>{}) || ...);
  return status;
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
