// SPDX-License-Identifier: BSD-3-Clause
// What the Hopper kernels (forward_sm90.cu, backward_sm90.cu) share: tensors as the TMA sees
// them, issuing and waiting for warpgroup MMAs, rounding accumulators into 16-bit operands, and
// named barriers.
#pragma once

#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

#include <cutlass/numeric_conversion.h>
#include <cutlass/numeric_types.h>
#include <cute/tensor.hpp>

#include "tensor_args.hpp"

namespace rfa_cuda {
namespace hopper {

// A [batch][seq][head][dim] tensor as TMA sees it: (seq, dim, head, batch), dim contiguous.
using GmemLayout =
    cute::Layout<cute::Shape<int, int, int, int>, cute::Stride<std::int64_t, cute::_1, std::int64_t, std::int64_t>>;

template <typename T>
auto gmem_tensor(const detail::StridedTensor& t, int seq, int dim, int heads, int batch) {
  using namespace cute;
  return make_tensor(make_gmem_ptr(static_cast<const T*>(t.data)),
                     GmemLayout(make_shape(seq, dim, heads, batch), make_stride(t.seq, _1{}, t.head, t.batch)));
}

template <typename T>
using GmemTensor = decltype(gmem_tensor<T>(std::declval<detail::StridedTensor>(), 0, 0, 0, 0));

// CUTLASS's type for the CUDA element type that detail::dispatch_dtype_dims hands out.
template <typename CudaElement>
using CutlassElement =
    std::conditional_t<std::is_same_v<CudaElement, __nv_bfloat16>, cutlass::bfloat16_t, cutlass::half_t>;

// The parameters of a CTA's TMA pipeline whose warpgroup 0 produces (its thread 0 issues the
// copies) and whose other `consumers` threads consume, `bytes` arriving per stage.
template <class Pipeline>
__device__ __forceinline__ typename Pipeline::Params warpgroup_pipeline_params(std::uint32_t bytes, int consumers) {
  typename Pipeline::Params p;
  p.transaction_bytes = bytes;
  p.role = threadIdx.x < 128 ? Pipeline::ThreadCategory::Producer : Pipeline::ThreadCategory::Consumer;
  p.is_leader = threadIdx.x == 0;
  p.num_consumers = static_cast<std::uint32_t>(consumers);
  return p;
}

// Issues c (+)= a b on the tensor cores and returns before it completes (wait_for_products).
// `zero` starts c from zero instead of accumulating into it; kARegisters: a is a register
// fragment (the compiler must not move its writes past the issue), not shared-memory descriptors.
template <bool kARegisters, class Mma, class A, class B, class C>
__device__ __forceinline__ void issue_gemm(Mma& mma, A& a, B const& b, C& c, bool zero) {
  using namespace cute;
  if constexpr (kARegisters) warpgroup_fence_operand(a);
  warpgroup_fence_operand(c);
  warpgroup_arrive();
  mma.accumulate_ = zero ? GMMA::ScaleOut::Zero : GMMA::ScaleOut::One;
  CUTE_UNROLL
  for (int kb = 0; kb < size<2>(a); ++kb) {
    cute::gemm(mma, a(_, _, kb), b(_, _, kb), c);
    mma.accumulate_ = GMMA::ScaleOut::One;
  }
  warpgroup_commit_batch();
  warpgroup_fence_operand(c);
  if constexpr (kARegisters) warpgroup_fence_operand(a);
}

// Waits until at most kPending product groups are in flight, then pins the named fragments so
// that the compiler neither reads an accumulator nor rewrites an operand before the wait.
template <int kPending, class... Fragments>
__device__ __forceinline__ void wait_for_products(Fragments&... fragments) {
  cute::warpgroup_wait<kPending>();
  (cute::warpgroup_fence_operand(fragments), ...);
}

// fp32 accumulators -> a 16-bit register operand of the same layout, two values per conversion.
template <class Src, class Dst>
__device__ __forceinline__ void round_into(Src const& src, Dst& dst) {
  using T = typename Dst::value_type;
  constexpr int kCount = decltype(cute::size(src))::value;
  cutlass::NumericArrayConverter<T, float, kCount> convert;
  auto out = convert(*reinterpret_cast<const cutlass::Array<float, kCount>*>(src.data()));
  *reinterpret_cast<cutlass::Array<T, kCount>*>(dst.data()) = out;
}

// Two values rounded to the 16-bit T, `lo` in the low half (the lower column): one 4-byte store.
template <typename T>
__device__ __forceinline__ std::uint32_t pack_pair(float lo, float hi) {
  return static_cast<std::uint32_t>(T(lo).raw()) | static_cast<std::uint32_t>(T(hi).raw()) << 16;
}

// Named barriers (0 is __syncthreads'): `threads` threads, a multiple of 32, meet at `id`. Each
// is a compiler barrier for memory too ("memory"), so that the shared-memory stores and loads
// around it stay on their side whatever asm happens to stand beside them.
__device__ __forceinline__ void named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void named_barrier_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

}  // namespace hopper
}  // namespace rfa_cuda
