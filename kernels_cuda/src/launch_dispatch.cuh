// SPDX-License-Identifier: BSD-3-Clause
// Host-side launch plumbing shared by the flash kernels: the (dtype, head dims) dispatch to a
// template instantiation of the head-dim pairs a kernel family takes, and a launch that first raises
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

// A head-dim pair a family of kernels is instantiated for: Q and K's, and V's (also out, dout
// and dV's), equal but for multi-head latent attention's 192 / 128.
template <int kQueryKey, int kValue>
struct DimPair {};
template <class... Pairs>
struct DimPairs {};

// The sm_80 kernels' and the Hopper kernels' (flash_api.cu refuses the others by name).
// The sm_80 kernels take rows of 32 columns or of a multiple of 64 (device_primitives.cuh's
// swizzle): every such head dim up to 256, and MLA's pair.
using Sm80DimPairs = DimPairs<DimPair<32, 32>, DimPair<64, 64>, DimPair<128, 128>, DimPair<192, 192>, DimPair<256, 256>,
                              DimPair<192, 128>>;
using Sm90DimPairs = DimPairs<DimPair<64, 64>, DimPair<128, 128>>;

template <int... kQk, int... kV>
constexpr bool takes_dims(DimPairs<DimPair<kQk, kV>...>, std::int64_t head_dim, std::int64_t value_dim) {
  return ((head_dim == kQk && value_dim == kV) || ...);
}

// Calls launch(T{}, std::integral_constant<int, D>{}, std::integral_constant<int, DV>{}) for the
// element type and the head dims (D, DV), which must be one of the pairs (the API refuses the
// others first, with a message).
template <int... kQk, int... kV, typename Launch>
cudaError_t dispatch_dtype_dims(DimPairs<DimPair<kQk, kV>...>, ElementType dtype, int head_dim, int value_dim,
                                Launch&& launch) {
  const bool bf16 = dtype == ElementType::kBf16;
  cudaError_t status = cudaErrorInvalidValue;
  const auto try_pair = [&](auto dim, auto value) {
    if (head_dim != decltype(dim)::value || value_dim != decltype(value)::value) return false;
    status = bf16 ? launch(__nv_bfloat16{}, dim, value) : launch(__half{}, dim, value);
    return true;
  };
  (void)(try_pair(std::integral_constant<int, kQk>{}, std::integral_constant<int, kV>{}) || ...);
  return status;
}

// Config<D, DV>::kSmemBytes for the pair (head_dim, value_dim) of `pairs`; 0 for a pair not in it.
template <template <int, int> class Config, class Pairs>
int config_shared_bytes(Pairs pairs, int head_dim, int value_dim) {
  int bytes = 0;
  dispatch_dtype_dims(pairs, ElementType::kBf16, head_dim, value_dim, [&](auto, auto dim, auto value) {
    bytes = Config<decltype(dim)::value, decltype(value)::value>::kSmemBytes;
    return cudaSuccess;
  });
  return bytes;
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
