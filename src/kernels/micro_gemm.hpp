// SPDX-License-Identifier: BSD-3-Clause
// The register-blocked matrix-product core shared by the forward and backward kernels.
//
// Every product in flash attention (S = Q K^T, O += P V, dP = dO V^T, dV += P^T dO,
// dK += dS^T Q, dQ += dS K) has the form C[M][N] (+)= A(M x K) * B[K][N] with B row-major
// and A reachable through two strides, so a transposed A (P^T, dS^T) costs nothing: the
// kernel broadcasts one A element per row and multiplies a row of B. The MR x 16 block of C
// stays in registers for the whole K loop (6 x 16 = 12 accumulators on AVX2), the classic
// shape that keeps both FMA pipes busy with two B loads and six broadcasts per step.
#pragma once

#include <cstddef>

#include "kernels/simd.hpp"

namespace rfa {
namespace kernels {

// On the host the micro-kernel stays a function of its own: inlined into a large kernel body
// it loses the general-purpose registers its row pointers need and reloads them every step.
#if RFA_NATIVE_VECTORS
#define RFA_MICRO_KERNEL __attribute__((noinline))
#else
#define RFA_MICRO_KERNEL KOKKOS_INLINE_FUNCTION
#endif

constexpr int kMicroRows = 6;  // MR: rows of C per micro-tile

/// A through two strides; one of them must be 1 (row-major A, or its transpose).
struct MatrixA {
  const float* data;
  std::ptrdiff_t row_stride;    // step between rows of A (between rows of C)
  std::ptrdiff_t inner_stride;  // step along the reduction dimension
};

/// C[0:MR][0:L*NV] (+)= A[0:MR][0:K] * B[0:K][0:L*NV], on vectors V of L lanes: simd::f8, or
/// simd::wide where the compiler targets AVX-512 (twice the FLOPs per instruction, same block).
/// The two A access patterns get their own loops so every A element is one broadcast with a
/// plain base+index address: with a generic stride pair the compiler keeps the row offsets on
/// the stack and each broadcast costs an extra load, which makes the loop load-bound instead
/// of FMA-bound.
template <class V, int MR, int NV>
RFA_MICRO_KERNEL void micro_tile(int K, MatrixA a, const float* b, std::ptrdiff_t ldb, float* c,
                                 std::ptrdiff_t ldc, bool accumulate) {
  constexpr int L = int(sizeof(V) / sizeof(float));
  V acc[MR][NV];
  for (int i = 0; i < MR; ++i)
    for (int v = 0; v < NV; ++v)
      acc[i][v] = accumulate ? simd::load_as<V>(c + i * ldc + L * v) : simd::splat<V>(0.0f);
  if (a.inner_stride == 1) {  // A row-major: MR row pointers, one shared index
    const float* rows[MR];
    for (int i = 0; i < MR; ++i) rows[i] = a.data + i * a.row_stride;
    for (int k = 0; k < K; ++k) {
      V bv[NV];
      for (int v = 0; v < NV; ++v) bv[v] = simd::load_as<V>(b + k * ldb + L * v);
      for (int i = 0; i < MR; ++i) {
        const V ai = simd::splat<V>(rows[i][k]);
        for (int v = 0; v < NV; ++v) acc[i][v] = simd::fma(ai, bv[v], acc[i][v]);
      }
    }
  } else {  // A transposed (row_stride == 1): MR consecutive values per step
    const float* ak = a.data;
    for (int k = 0; k < K; ++k, ak += a.inner_stride) {
      V bv[NV];
      for (int v = 0; v < NV; ++v) bv[v] = simd::load_as<V>(b + k * ldb + L * v);
      for (int i = 0; i < MR; ++i) {
        const V ai = simd::splat<V>(ak[i]);
        for (int v = 0; v < NV; ++v) acc[i][v] = simd::fma(ai, bv[v], acc[i][v]);
      }
    }
  }
  for (int i = 0; i < MR; ++i)
    for (int v = 0; v < NV; ++v) simd::store_as(c + i * ldc + L * v, acc[i][v]);
}

/// C[M][N] (+)= A[M][K] * B[K][N], with M a multiple of kMicroRows and N a multiple of 8.
/// Column strips of B are the outer loop so a strip (K x 16 floats) stays in L1 while every
/// row block of A streams past it. `after_tile()` runs after each micro-tile: the kernels
/// spread their prefetches of the next tile's rows over a product with it (row_copy.hpp).
/// `skip(i0, i1, j0, j1)` true leaves the block C[i0:i1][j0:j1] unwritten (the kernels' masked
/// blocks, which they overwrite or whose A rows are zero); after_tile() still runs for it.
template <class AfterTile, class Skip>
KOKKOS_INLINE_FUNCTION void gemm(int M, int N, int K, MatrixA a, const float* b, std::ptrdiff_t ldb, float* c,
                                 std::ptrdiff_t ldc, bool accumulate, AfterTile&& after_tile, Skip&& skip) {
  int j = 0;
#if RFA_NATIVE_VECTORS && defined(__AVX512F__)
  // Where the compiler targets AVX-512 (-march=native on such a machine) the products run on
  // 16-lane registers; everything else in the kernels stays 8-lane (simd.hpp).
  for (; j + 32 <= N; j += 32) {
    // 12 x 32 blocks where the rows allow (24 of the 32 zmm registers accumulate: each B load
    // feeds twice the FMAs), the last 6 rows as 6 x 32.
    int i = 0;
    for (; i + 2 * kMicroRows <= M; i += 2 * kMicroRows) {
      const MatrixA ai{a.data + i * a.row_stride, a.row_stride, a.inner_stride};
      if (!skip(i, i + 2 * kMicroRows, j, j + 32))
        micro_tile<simd::wide, 2 * kMicroRows, 2>(K, ai, b + j, ldb, c + i * ldc + j, ldc, accumulate);
      after_tile();
    }
    for (; i < M; i += kMicroRows) {
      const MatrixA ai{a.data + i * a.row_stride, a.row_stride, a.inner_stride};
      if (!skip(i, i + kMicroRows, j, j + 32))
        micro_tile<simd::wide, kMicroRows, 2>(K, ai, b + j, ldb, c + i * ldc + j, ldc, accumulate);
      after_tile();
    }
  }
#endif
  for (; j + 16 <= N; j += 16) {
    for (int i = 0; i < M; i += kMicroRows) {
      const MatrixA ai{a.data + i * a.row_stride, a.row_stride, a.inner_stride};
      if (!skip(i, i + kMicroRows, j, j + 16))
        micro_tile<simd::f8, kMicroRows, 2>(K, ai, b + j, ldb, c + i * ldc + j, ldc, accumulate);
      after_tile();
    }
  }
  if (j < N) {  // one 8-wide strip left (N is a multiple of 8)
    for (int i = 0; i < M; i += kMicroRows) {
      const MatrixA ai{a.data + i * a.row_stride, a.row_stride, a.inner_stride};
      if (!skip(i, i + kMicroRows, j, j + 8))
        micro_tile<simd::f8, kMicroRows, 1>(K, ai, b + j, ldb, c + i * ldc + j, ldc, accumulate);
      after_tile();
    }
  }
}

/// How many times gemm(M, N, ...) calls after_tile().
KOKKOS_INLINE_FUNCTION int gemm_micro_tiles(int M, int N) {
  int tiles = 0, j = 0;
#if RFA_NATIVE_VECTORS && defined(__AVX512F__)
  tiles += (N / 32) * (M / (2 * kMicroRows) + (M % (2 * kMicroRows)) / kMicroRows);
  j = N / 32 * 32;
#endif
  return tiles + ((N - j + 15) / 16) * (M / kMicroRows);
}

struct NothingAfterTile {
  KOKKOS_INLINE_FUNCTION void operator()() const {}
};

struct SkipNothing {
  KOKKOS_INLINE_FUNCTION bool operator()(int, int, int, int) const { return false; }
};

template <class AfterTile>
KOKKOS_INLINE_FUNCTION void gemm(int M, int N, int K, MatrixA a, const float* b, std::ptrdiff_t ldb, float* c,
                                 std::ptrdiff_t ldc, bool accumulate, AfterTile&& after_tile) {
  gemm(M, N, K, a, b, ldb, c, ldc, accumulate, after_tile, SkipNothing{});
}

KOKKOS_INLINE_FUNCTION void gemm(int M, int N, int K, MatrixA a, const float* b, std::ptrdiff_t ldb, float* c,
                                 std::ptrdiff_t ldc, bool accumulate) {
  gemm(M, N, K, a, b, ldb, c, ldc, accumulate, NothingAfterTile{}, SkipNothing{});
}

KOKKOS_INLINE_FUNCTION int round_up(int x, int m) { return (x + m - 1) / m * m; }

}  // namespace kernels
}  // namespace rfa
