// SPDX-License-Identifier: BSD-3-Clause
// Memory-bound helpers that work one (batch, position, head) row at a time, one warp per row:
// D = rowsum(dO * O), the ring merge of partial outputs (also of cuDNN band outputs in the
// storage dtype), the accumulation of 16-bit band gradients into fp32, and fp32 -> 16-bit
// conversion.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>

#include "kernel_args.hpp"
#include "rowwise_launchers.hpp"

namespace rfa_cuda {
namespace detail {
namespace {

constexpr int kWarpsPerBlock = 8;

__device__ __forceinline__ float load_as_float(const void* base, std::int64_t i, ElementType type) {
  switch (type) {
    case ElementType::kBf16: return __bfloat162float(static_cast<const __nv_bfloat16*>(base)[i]);
    case ElementType::kFp16: return __half2float(static_cast<const __half*>(base)[i]);
    default: return static_cast<const float*>(base)[i];
  }
}

struct RowIndex {
  int b, s, h;
  bool valid;
};

// Rows are numbered in [b][h][s] order so that consecutive warps write consecutive
// lse/delta entries.
__device__ __forceinline__ RowIndex this_warps_row(const RowwiseShape& shape) {
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  const std::int64_t rows = static_cast<std::int64_t>(shape.batch) * shape.heads * shape.seq;
  RowIndex r{};
  r.valid = row < rows;
  if (!r.valid) return r;
  r.s = static_cast<int>(row % shape.seq);
  r.h = static_cast<int>((row / shape.seq) % shape.heads);
  r.b = static_cast<int>(row / (static_cast<std::int64_t>(shape.seq) * shape.heads));
  return r;
}

__device__ __forceinline__ std::int64_t offset_of(const StridedTensor& t, const RowIndex& r) {
  return r.b * t.batch + r.s * t.seq + r.h * t.head;
}

__device__ __forceinline__ std::int64_t lse_index(const RowwiseShape& shape, const RowIndex& r) {
  return (static_cast<std::int64_t>(r.b) * shape.heads + r.h) * shape.seq + r.s;
}

__global__ void attention_delta_kernel(RowwiseShape shape, StridedTensor out, ElementType out_type, StridedTensor dout,
                                       ElementType dout_type, float* delta) {
  const RowIndex r = this_warps_row(shape);
  if (!r.valid) return;
  const int lane = threadIdx.x % 32;
  const std::int64_t o = offset_of(out, r), g = offset_of(dout, r);
  float sum = 0.f;
  for (int d = lane; d < shape.head_dim; d += 32)
    sum += load_as_float(out.data, o + d, out_type) * load_as_float(dout.data, g + d, dout_type);
#pragma unroll
  for (int m = 16; m > 0; m /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, m);
  if (lane == 0) delta[lse_index(shape, r)] = sum;
}

// log(1 + exp(x)) without overflow.
__device__ __forceinline__ float softplus(float x) { return x > 0.f ? x + log1pf(expf(-x)) : log1pf(expf(x)); }

// The ring merge of a block's normalized output into the running one (rows of one (batch, head)
// of lse are lse_pitch apart; block_lse is [batch][heads][seq]):
//   weight = sigmoid(block_lse - lse) is the block's share of the merged softmax mass; with
//   lse = -inf it is exactly 1 and out takes the block's values (whatever out held), and
//   lse - logsigmoid(lse - block_lse) = lse + softplus(block_lse - lse).
__global__ void merge_band_kernel(RowwiseShape shape, StridedTensor out, float* lse, std::int64_t lse_pitch,
                                  StridedTensor block_out, ElementType block_type, const float* block_lse) {
  const RowIndex r = this_warps_row(shape);
  if (!r.valid) return;
  const int lane = threadIdx.x % 32;
  float* running_lse = lse + (static_cast<std::int64_t>(r.b) * shape.heads + r.h) * lse_pitch + r.s;
  const float old_lse = *running_lse;
  const float new_lse = block_lse[lse_index(shape, r)];
  if (new_lse == -INFINITY) return;  // the band saw nothing for this row: keep the running state
  float* o = static_cast<float*>(out.data) + offset_of(out, r);
  const std::int64_t bo = offset_of(block_out, r);
  const float weight = old_lse == -INFINITY ? 1.f : 1.f / (1.f + expf(old_lse - new_lse));
  for (int d = lane; d < shape.head_dim; d += 32) {
    const float current = weight == 1.f ? 0.f : o[d];
    o[d] = current - weight * (current - load_as_float(block_out.data, bo + d, block_type));
  }
  __syncwarp();
  if (lane == 0) *running_lse = old_lse == -INFINITY ? new_lse : old_lse + softplus(new_lse - old_lse);
}

__global__ void accumulate_band_kernel(RowwiseShape shape, StridedTensor into, StridedTensor from,
                                       ElementType from_type) {
  const RowIndex r = this_warps_row(shape);
  if (!r.valid) return;
  float* dst = static_cast<float*>(into.data) + offset_of(into, r);
  const std::int64_t src = offset_of(from, r);
  for (int d = threadIdx.x % 32; d < shape.head_dim; d += 32) dst[d] += load_as_float(from.data, src + d, from_type);
}

template <typename T>
__device__ __forceinline__ T from_float(float x);
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}
template <>
__device__ __forceinline__ __half from_float<__half>(float x) {
  return __float2half_rn(x);
}

template <typename T>
__global__ void convert_from_fp32_kernel(RowwiseShape shape, StridedTensor src, StridedTensor dst) {
  const RowIndex r = this_warps_row(shape);
  if (!r.valid) return;
  const float* s = static_cast<const float*>(src.data) + offset_of(src, r);
  T* d = static_cast<T*>(dst.data) + offset_of(dst, r);
  for (int i = threadIdx.x % 32; i < shape.head_dim; i += 32) d[i] = from_float<T>(s[i]);
}

unsigned blocks_for(const RowwiseShape& shape) {
  const std::int64_t rows = static_cast<std::int64_t>(shape.batch) * shape.heads * shape.seq;
  return static_cast<unsigned>((rows + kWarpsPerBlock - 1) / kWarpsPerBlock);
}

}  // namespace

cudaError_t launch_attention_delta(const RowwiseShape& shape, StridedTensor out, ElementType out_type,
                                   StridedTensor dout, ElementType dout_type, float* delta, cudaStream_t stream) {
  attention_delta_kernel<<<blocks_for(shape), 32 * kWarpsPerBlock, 0, stream>>>(shape, out, out_type, dout, dout_type,
                                                                                delta);
  return cudaGetLastError();
}

cudaError_t launch_merge_partial(const RowwiseShape& shape, StridedTensor out, float* lse, StridedTensor block_out,
                                 const float* block_lse, cudaStream_t stream) {
  return launch_merge_band(shape, out, lse, shape.seq, block_out, ElementType::kFp32, block_lse, stream);
}

cudaError_t launch_convert_from_fp32(const RowwiseShape& shape, StridedTensor src, StridedTensor dst,
                                     ElementType dst_type, cudaStream_t stream) {
  if (dst_type == ElementType::kBf16)
    convert_from_fp32_kernel<__nv_bfloat16><<<blocks_for(shape), 32 * kWarpsPerBlock, 0, stream>>>(shape, src, dst);
  else
    convert_from_fp32_kernel<__half><<<blocks_for(shape), 32 * kWarpsPerBlock, 0, stream>>>(shape, src, dst);
  return cudaGetLastError();
}

cudaError_t launch_merge_band(const RowwiseShape& shape, StridedTensor out, float* lse, std::int64_t lse_pitch,
                              StridedTensor block_out, ElementType block_type, const float* block_lse,
                              cudaStream_t stream) {
  merge_band_kernel<<<blocks_for(shape), 32 * kWarpsPerBlock, 0, stream>>>(shape, out, lse, lse_pitch, block_out,
                                                                           block_type, block_lse);
  return cudaGetLastError();
}

cudaError_t launch_accumulate_band(const RowwiseShape& shape, StridedTensor into, StridedTensor from,
                                   ElementType from_type, cudaStream_t stream) {
  accumulate_band_kernel<<<blocks_for(shape), 32 * kWarpsPerBlock, 0, stream>>>(shape, into, from, from_type);
  return cudaGetLastError();
}

}  // namespace detail
}  // namespace rfa_cuda
