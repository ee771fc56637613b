// SPDX-License-Identifier: BSD-3-Clause
// Memory-bound helpers that work one (batch, position, head) row at a time, one warp per row
// (each lane 4 adjacent elements at a time where the tensors allow it):
// D = rowsum(dO * O), the ring merge of partial outputs (also of cuDNN band outputs in the
// storage dtype), the accumulation of 16-bit band gradients into fp32, and fp32 -> 16-bit
// conversion.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <type_traits>
#include <utility>

#include "kernel_args.hpp"
#include "rowwise_launchers.hpp"

namespace rfa_cuda {
namespace detail {
namespace {

constexpr int kWarpsPerBlock = 8;

// Each lane reads and writes V adjacent elements of a row at a time: 4 (16 bytes of fp32, 8 of a
// 16-bit type; a row of 128 in one pass of the warp) where every tensor of the launch allows it
// (vectors), else 1.
template <int V>
struct Floats {
  float x[V];
};

union Pairs16 {  // four 16-bit elements as one 8-byte load or store
  uint2 raw;
  __nv_bfloat162 bf16[2];
  __half2 fp16[2];
};

__device__ __forceinline__ float load_as_float(const void* base, std::int64_t i, ElementType type) {
  switch (type) {
    case ElementType::kBf16: return __bfloat162float(static_cast<const __nv_bfloat16*>(base)[i]);
    case ElementType::kFp16: return __half2float(static_cast<const __half*>(base)[i]);
    default: return static_cast<const float*>(base)[i];
  }
}

template <int V>
__device__ __forceinline__ Floats<V> load_floats(const void* base, std::int64_t i, ElementType type) {
  Floats<V> f;
  if constexpr (V == 1) {
    f.x[0] = load_as_float(base, i, type);
  } else {
    static_assert(V == 4, "vectors of 4 elements");
    if (type == ElementType::kFp32) {
      const float4 v = *reinterpret_cast<const float4*>(static_cast<const float*>(base) + i);
      f.x[0] = v.x, f.x[1] = v.y, f.x[2] = v.z, f.x[3] = v.w;
    } else {
      Pairs16 p;
      p.raw = *reinterpret_cast<const uint2*>(static_cast<const std::uint16_t*>(base) + i);
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const float2 two = type == ElementType::kBf16 ? __bfloat1622float2(p.bf16[h]) : __half22float2(p.fp16[h]);
        f.x[2 * h] = two.x, f.x[2 * h + 1] = two.y;
      }
    }
  }
  return f;
}

template <int V>
__device__ __forceinline__ void store_floats(float* base, const Floats<V>& f) {
  if constexpr (V == 1) {
    *base = f.x[0];
  } else {
    *reinterpret_cast<float4*>(base) = make_float4(f.x[0], f.x[1], f.x[2], f.x[3]);
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

template <int V>
__global__ void attention_delta_kernel(RowwiseShape shape, StridedTensor out, ElementType out_type, StridedTensor dout,
                                       ElementType dout_type, float* delta) {
  const RowIndex r = this_warps_row(shape);
  if (!r.valid) return;
  const int lane = threadIdx.x % 32;
  const std::int64_t o = offset_of(out, r), g = offset_of(dout, r);
  float sum = 0.f;
  for (int d = lane * V; d < shape.head_dim; d += 32 * V) {
    const Floats<V> a = load_floats<V>(out.data, o + d, out_type), b = load_floats<V>(dout.data, g + d, dout_type);
#pragma unroll
    for (int i = 0; i < V; ++i) sum += a.x[i] * b.x[i];
  }
#pragma unroll
  for (int m = 16; m > 0; m /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, m);
  if (lane == 0) delta[lse_index(shape, r)] = sum;
}

// log(e^a + e^b) = hi + log(1 + e^(lo - hi)) without overflow, lses past fp32's range apart
// included (lo - hi is then -inf, and the sum hi). A NaN stays NaN (fmaxf would drop it).
__device__ __forceinline__ float log_add_exp(float a, float b) {
  const float hi = a > b ? a : b, lo = a > b ? b : a;
  return hi + log1pf(expf(lo - hi));
}

// The ring merge of a block's normalized output into the running one (rows of one (batch, head)
// of lse are lse_pitch apart; block_lse is [batch][heads][seq]):
//   weight = sigmoid(block_lse - lse) is the block's share of the merged softmax mass; with
//   lse = -inf it is exactly 1 and out takes the block's values (whatever out held), and
//   the lse becomes log(e^lse + e^block_lse) (log_add_exp).
template <int V>
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
  for (int d = lane * V; d < shape.head_dim; d += 32 * V) {
    const Floats<V> block = load_floats<V>(block_out.data, bo + d, block_type);
    Floats<V> merged = weight == 1.f ? Floats<V>{} : load_floats<V>(o + d, 0, ElementType::kFp32);
#pragma unroll
    for (int i = 0; i < V; ++i) merged.x[i] -= weight * (merged.x[i] - block.x[i]);
    store_floats<V>(o + d, merged);
  }
  __syncwarp();
  if (lane == 0) *running_lse = old_lse == -INFINITY ? new_lse : log_add_exp(old_lse, new_lse);
}

template <int V>
__global__ void accumulate_band_kernel(RowwiseShape shape, StridedTensor into, StridedTensor from,
                                       ElementType from_type) {
  const RowIndex r = this_warps_row(shape);
  if (!r.valid) return;
  float* dst = static_cast<float*>(into.data) + offset_of(into, r);
  const std::int64_t src = offset_of(from, r);
  for (int d = threadIdx.x % 32 * V; d < shape.head_dim; d += 32 * V) {
    const Floats<V> add = load_floats<V>(from.data, src + d, from_type);
    Floats<V> sum = load_floats<V>(dst + d, 0, ElementType::kFp32);
#pragma unroll
    for (int i = 0; i < V; ++i) sum.x[i] += add.x[i];
    store_floats<V>(dst + d, sum);
  }
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

template <typename T, int V>
__global__ void convert_from_fp32_kernel(RowwiseShape shape, StridedTensor src, StridedTensor dst) {
  const RowIndex r = this_warps_row(shape);
  if (!r.valid) return;
  const float* s = static_cast<const float*>(src.data) + offset_of(src, r);
  T* d = static_cast<T*>(dst.data) + offset_of(dst, r);
  for (int i = threadIdx.x % 32 * V; i < shape.head_dim; i += 32 * V) {
    const Floats<V> f = load_floats<V>(s + i, 0, ElementType::kFp32);
    if constexpr (V == 1) {
      d[i] = from_float<T>(f.x[0]);
    } else {
      Pairs16 p;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        if constexpr (std::is_same_v<T, __nv_bfloat16>) {
          p.bf16[h] = __floats2bfloat162_rn(f.x[2 * h], f.x[2 * h + 1]);
        } else {
          p.fp16[h] = __floats2half2_rn(f.x[2 * h], f.x[2 * h + 1]);
        }
      }
      *reinterpret_cast<uint2*>(d + i) = p.raw;
    }
  }
}

std::size_t element_bytes(ElementType type) { return type == ElementType::kFp32 ? 4 : 2; }

// Whether a lane may move 4 adjacent elements of every row of `t` at once: the head dim and every
// stride a multiple of 4 and the base aligned to 4 elements (rows then start on 4-element
// boundaries too).
bool takes_vectors(const RowwiseShape& shape, const StridedTensor& t, ElementType type) {
  return shape.head_dim % 4 == 0 && t.batch % 4 == 0 && t.seq % 4 == 0 && t.head % 4 == 0 &&
         reinterpret_cast<std::uintptr_t>(t.data) % (4 * element_bytes(type)) == 0;
}

// Whether the launch runs 4 elements a lane: every tensor takes vectors (else 1 element).
bool vectors(const RowwiseShape& shape, std::initializer_list<std::pair<StridedTensor, ElementType>> tensors) {
  for (const auto& [t, type] : tensors)
    if (!takes_vectors(shape, t, type)) return false;
  return true;
}

// The blocks for a row a warp. Past CUDA's 2^31 - 1 blocks the count is held at 2^31, which the
// launch refuses (cudaErrorInvalidConfiguration, reported): a count cut to 32 bits would leave
// the last rows silently untouched. The public row-wise calls cap rows far below; the internal
// callers of the backward and cuDNN's merge do not check.
unsigned blocks_for(const RowwiseShape& shape) {
  const std::int64_t rows = static_cast<std::int64_t>(shape.batch) * shape.heads * shape.seq;
  const std::int64_t blocks = (rows + kWarpsPerBlock - 1) / kWarpsPerBlock;
  return blocks > 0x7fffffff ? 0x80000000u : static_cast<unsigned>(blocks);
}

}  // namespace

cudaError_t launch_attention_delta(const RowwiseShape& shape, StridedTensor out, ElementType out_type,
                                   StridedTensor dout, ElementType dout_type, float* delta, cudaStream_t stream) {
  const auto kernel =
      vectors(shape, {{out, out_type}, {dout, dout_type}}) ? attention_delta_kernel<4> : attention_delta_kernel<1>;
  kernel<<<blocks_for(shape), 32 * kWarpsPerBlock, 0, stream>>>(shape, out, out_type, dout, dout_type, delta);
  return cudaGetLastError();
}

cudaError_t launch_merge_partial(const RowwiseShape& shape, StridedTensor out, float* lse, StridedTensor block_out,
                                 const float* block_lse, cudaStream_t stream) {
  return launch_merge_band(shape, out, lse, shape.seq, block_out, ElementType::kFp32, block_lse, stream);
}

cudaError_t launch_convert_from_fp32(const RowwiseShape& shape, StridedTensor src, StridedTensor dst,
                                     ElementType dst_type, cudaStream_t stream) {
  const bool wide = vectors(shape, {{src, ElementType::kFp32}, {dst, dst_type}});
  const auto kernel =
      dst_type == ElementType::kBf16
          ? (wide ? convert_from_fp32_kernel<__nv_bfloat16, 4> : convert_from_fp32_kernel<__nv_bfloat16, 1>)
          : (wide ? convert_from_fp32_kernel<__half, 4> : convert_from_fp32_kernel<__half, 1>);
  kernel<<<blocks_for(shape), 32 * kWarpsPerBlock, 0, stream>>>(shape, src, dst);
  return cudaGetLastError();
}

cudaError_t launch_merge_band(const RowwiseShape& shape, StridedTensor out, float* lse, std::int64_t lse_pitch,
                              StridedTensor block_out, ElementType block_type, const float* block_lse,
                              cudaStream_t stream) {
  const auto kernel = vectors(shape, {{out, ElementType::kFp32}, {block_out, block_type}}) ? merge_band_kernel<4>
                                                                                           : merge_band_kernel<1>;
  kernel<<<blocks_for(shape), 32 * kWarpsPerBlock, 0, stream>>>(shape, out, lse, lse_pitch, block_out, block_type,
                                                                block_lse);
  return cudaGetLastError();
}

cudaError_t launch_accumulate_band(const RowwiseShape& shape, StridedTensor into, StridedTensor from,
                                   ElementType from_type, cudaStream_t stream) {
  const auto kernel = vectors(shape, {{into, ElementType::kFp32}, {from, from_type}}) ? accumulate_band_kernel<4>
                                                                                      : accumulate_band_kernel<1>;
  kernel<<<blocks_for(shape), 32 * kWarpsPerBlock, 0, stream>>>(shape, into, from, from_type);
  return cudaGetLastError();
}

}  // namespace detail
}  // namespace rfa_cuda
