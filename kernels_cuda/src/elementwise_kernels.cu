// SPDX-License-Identifier: BSD-3-Clause
// Elementwise fp32 helpers the ring engine needs on the device besides the attention kernels:
// adding an arrived dK/dV partial into this step's contribution, and filling a fresh lse with
// -inf. Grid-stride loops: any count, one launch.
#include <cstddef>

#include "kernel_args.hpp"

namespace rfa_cuda {
namespace detail {
namespace {

constexpr int kThreads = 256;
constexpr unsigned kMaxBlocks = 4096;  // enough to fill any current GPU; the loop covers the rest

__global__ void add_fp32_kernel(float* into, const float* from, std::size_t count) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride)
    into[i] += from[i];
}

__global__ void fill_fp32_kernel(float* data, float value, std::size_t count) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride)
    data[i] = value;
}

unsigned blocks_for(std::size_t count) {
  const std::size_t blocks = (count + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

}  // namespace

cudaError_t launch_add_fp32(float* into, const float* from, std::size_t count, cudaStream_t stream) {
  add_fp32_kernel<<<blocks_for(count), kThreads, 0, stream>>>(into, from, count);
  return cudaGetLastError();
}

cudaError_t launch_fill_fp32(float* data, float value, std::size_t count, cudaStream_t stream) {
  fill_fp32_kernel<<<blocks_for(count), kThreads, 0, stream>>>(data, value, count);
  return cudaGetLastError();
}

}  // namespace detail
}  // namespace rfa_cuda
