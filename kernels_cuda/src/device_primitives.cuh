// SPDX-License-Identifier: BSD-3-Clause
// Thin wrappers over the sm_80 instructions the flash kernels are built from:
// cp.async (global -> shared copies that bypass registers), ldmatrix (shared -> mma fragments),
// mma.sync m16n8k16 (tensor cores, fp32 accumulate), plus the XOR swizzle of shared tiles.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

namespace rfa_cuda {
namespace detail {

__device__ __forceinline__ std::uint32_t shared_address(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

// Copies 16 bytes; when `valid` is false nothing is read and the destination is zero-filled,
// which is how rows past the end of a sequence become zeros (never garbage that 0*x = NaN).
__device__ __forceinline__ void cp_async_16(std::uint32_t dst, const void* src, bool valid) {
  const int src_bytes = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
}

__device__ __forceinline__ void cp_async_4(std::uint32_t dst, const void* src, bool valid) {
  const int src_bytes = valid ? 4 : 0;
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_group 0;\n" ::); }

// Four 8x8 b16 matrices; lanes 8i..8i+7 give the row addresses of matrix i.
__device__ __forceinline__ void ldmatrix_x4(std::uint32_t (&r)[4], std::uint32_t address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}

__device__ __forceinline__ void ldmatrix_x4_trans(std::uint32_t (&r)[4], std::uint32_t address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}

// c += a * b on a 16x8 tile with k = 16: a row-major (4 regs), b column-major (2 regs).
template <typename T>
__device__ __forceinline__ void mma_16816(float (&c)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                          std::uint32_t b1);

template <>
__device__ __forceinline__ void mma_16816<__nv_bfloat16>(float (&c)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                                         std::uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

template <>
__device__ __forceinline__ void mma_16816<__half>(float (&c)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                                  std::uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Two floats rounded to the 16-bit type, `lo` in the low half (the lower column index).
template <typename T>
__device__ __forceinline__ std::uint32_t pack2(float lo, float hi);

template <>
__device__ __forceinline__ std::uint32_t pack2<__nv_bfloat16>(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const std::uint32_t*>(&v);
}

template <>
__device__ __forceinline__ std::uint32_t pack2<__half>(float lo, float hi) {
  const __half2 v = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<const std::uint32_t*>(&v);
}

// Two adjacent gradient values at base + offset: rounded to T and stored (store), stored in
// fp32 (overwrite), or added to the fp32 values there (the caller must be their only writer, so
// no atomics are needed).
template <typename T>
__device__ __forceinline__ void store_or_add_pair(void* base, std::int64_t offset, float v0, float v1, bool store,
                                                  bool overwrite = false) {
  if (store) {
    *reinterpret_cast<std::uint32_t*>(static_cast<T*>(base) + offset) = pack2<T>(v0, v1);
  } else if (overwrite) {
    *reinterpret_cast<float2*>(static_cast<float*>(base) + offset) = make_float2(v0, v1);
  } else {
    float2* p = reinterpret_cast<float2*>(static_cast<float*>(base) + offset);
    float2 sum = *p;
    sum.x += v0;
    sum.y += v1;
    *p = sum;
  }
}

// The fp32 accumulators of two adjacent 16x8 tiles (columns 0-7 and 8-15) hold exactly the
// elements of one 16x16 A fragment; rounding them gives the next mma's A operand without
// a trip through shared memory.
template <typename T>
__device__ __forceinline__ void accumulators_to_a_fragment(const float (&left)[4], const float (&right)[4],
                                                           std::uint32_t (&a)[4]) {
  a[0] = pack2<T>(left[0], left[1]);
  a[1] = pack2<T>(left[2], left[3]);
  a[2] = pack2<T>(right[0], right[1]);
  a[3] = pack2<T>(right[2], right[3]);
}

// Element offset of (row, col) in a shared tile with `kCols` 16-bit columns per row.
// The 16-byte chunk index is XORed with a function of the row so that the 8 rows one
// ldmatrix phase reads (same logical chunk, consecutive rows) land on 8 different 16-byte
// bank groups: row % 8 for rows of >= 8 chunks; (row / 2) % 4 for rows of 4 chunks, where
// two consecutive rows already share one 128-byte line.
template <int kCols>
__device__ __forceinline__ int swizzled(int row, int col) {
  static_assert(kCols == 32 || kCols % 64 == 0, "rows of 4 or a multiple of 8 chunks");
  const int pattern = kCols == 32 ? (row >> 1) & 3 : row & 7;
  return row * kCols + (((col >> 3) ^ pattern) << 3) + (col & 7);
}

// Copies a kRows x kCols tile of 16-bit elements (rows `row_stride` elements apart) into a
// swizzled shared tile; rows >= valid_rows are zero-filled. A group of kSegment threads copies a
// whole row (a segment of 8 16-byte chunks where the threads do not divide into whole rows: head
// dim 192's 24), the same columns of rows kRowStep apart, a thread's source advancing by one
// stride, so that no per-chunk 64-bit offsets stand for the compiler to keep across a kernel's
// key loop (it kept them, and spilled them to local memory, in the forward at 32 rows a warp).
template <int kRows, int kCols, int kThreads, typename T>
__device__ __forceinline__ void load_tile_async(T* tile, const T* global, std::int64_t row_stride, int valid_rows) {
  constexpr int kChunksPerRow = kCols / 8;
  constexpr int kSegment = kThreads % kChunksPerRow == 0 ? kChunksPerRow : 8;  // chunks a group of threads copies
  constexpr int kRowStep = kThreads / kSegment;
  static_assert(kThreads % kSegment == 0 && kRows % kRowStep == 0, "every thread copies the same number of chunks");
  const int first_row = static_cast<int>(threadIdx.x) / kSegment;
  const int first_col = (static_cast<int>(threadIdx.x) % kSegment) * 8;
  const T* src = global + first_row * row_stride + first_col;
  const std::int64_t step = kRowStep * row_stride;
#pragma unroll
  for (int i = 0; i < kRows / kRowStep; ++i) {
    const int row = first_row + i * kRowStep;
    const bool valid = row < valid_rows;
#pragma unroll
    for (int segment = 0; segment < kChunksPerRow / kSegment; ++segment) {
      const int col = first_col + segment * kSegment * 8;
      cp_async_16(shared_address(tile + swizzled<kCols>(row, col)), valid ? src + segment * kSegment * 8 : global,
                  valid);
    }
    src += step;
  }
}

}  // namespace detail
}  // namespace rfa_cuda
