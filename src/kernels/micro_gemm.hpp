// SPDX-License-Identifier: BSD-3-Clause
// The register-blocked matrix-product core shared by the forward and backward kernels.
//
// Every product in flash attention (S = Q K^T, O += P V, dP = dO V^T, dV += P^T dO,
// dK += dS^T Q, dQ += dS K) has the form C[M][N] (+)= A(M x K) * B[K][N] with B row-major
// and A row-major or stored transposed, so a transposed A (P^T, dS^T) costs nothing: the
// kernel broadcasts one A element per row and multiplies a row of B. The MR x 16 block of C
// stays in registers for the whole K loop (6 x 16 = 12 accumulators on AVX2).
#pragma once

#include <cstddef>

#include "kernels/simd.hpp"

namespace rfa {
namespace kernels {

// On the host each column strip of a product is a function of its own, with the micro-kernel
// inlined into its row-block loop: inlined into a large kernel body the micro-kernel loses the
// general-purpose registers its row pointers need and reloads them every step, and called once
// per micro-tile its frame and the accumulators' trip through the stack cost 5-10% of a 128-step
// micro-tile in L1 (perf/RESULTS.md, "2026-11-25 (late night, Zen 3 VM) — one call per column
// strip; the products against BLAS").
#if RFA_NATIVE_VECTORS
#define RFA_MICRO_KERNEL __attribute__((noinline))
#else
#define RFA_MICRO_KERNEL KOKKOS_INLINE_FUNCTION
#endif

// Loops over registers are unrolled whole before the compiler decides what lives in memory:
// GCC otherwise keeps the MR x NV accumulators in a stack array around the K loop and copies
// them in and out of registers on every micro-tile.
#if defined(__CUDACC__) || defined(__HIPCC__)
#define RFA_UNROLL_REGISTERS
#elif defined(__clang__)
#define RFA_UNROLL_REGISTERS _Pragma("unroll")
#elif defined(__GNUC__)
#define RFA_UNROLL_REGISTERS _Pragma("GCC unroll 32")
#else
#define RFA_UNROLL_REGISTERS
#endif

constexpr int kMicroRows = 6;  // MR: rows of C per micro-tile

/// A row-major: row i of A (of C) starts `row_stride` floats after row i - 1, and the
/// reduction dimension is contiguous.
struct RowMajorA {
  const float* data;
  std::ptrdiff_t row_stride;
};

/// A stored transposed (A^T row-major: P^T and dS^T read from P and dS): the values of
/// consecutive rows for one reduction step are contiguous, steps `inner_stride` floats apart.
struct TransposedA {
  const float* data;
  std::ptrdiff_t inner_stride;
};

KOKKOS_INLINE_FUNCTION RowMajorA rows_from(RowMajorA a, int i) { return {a.data + i * a.row_stride, a.row_stride}; }
KOKKOS_INLINE_FUNCTION TransposedA rows_from(TransposedA a, int i) { return {a.data + i, a.inner_stride}; }

/// What a product does with C.
enum class Update { overwrite, accumulate };  // C = A B, or C += A B

/// One step of the reduction: acc[i][:] += a(i) * B's row, for the MR rows of the block.
template <class V, int MR, int NV, class AValue>
KOKKOS_FORCEINLINE_FUNCTION void rank1_update(V (&acc)[MR][NV], const float* b_row, AValue a) {
  constexpr int L = int(sizeof(V) / sizeof(float));
  V bv[NV];
  RFA_UNROLL_REGISTERS
  for (int v = 0; v < NV; ++v) bv[v] = simd::load_as<V>(b_row + L * v);
  RFA_UNROLL_REGISTERS
  for (int i = 0; i < MR; ++i) {
    const V ai = simd::splat<V>(a(i));
    RFA_UNROLL_REGISTERS
    for (int v = 0; v < NV; ++v) acc[i][v] = simd::fma(ai, bv[v], acc[i][v]);
  }
}

/// acc[0:MR][0:L*NV] += A[0:MR][0:K] * B[0:K][0:L*NV], on vectors V of L lanes, for K >= 1 (a
/// loop that may run no step makes GCC keep the accumulators in memory). Each layout of
/// A has its own loop so every A element is one broadcast with a plain base+index address:
/// with a generic stride pair the compiler keeps the row offsets on the stack and each
/// broadcast costs an extra load, which makes the loop load-bound instead of FMA-bound.
template <class V, int MR, int NV>
KOKKOS_FORCEINLINE_FUNCTION void k_loop(V (&acc)[MR][NV], int K, RowMajorA a, const float* b, std::ptrdiff_t ldb) {
  const float* rows[MR];
  RFA_UNROLL_REGISTERS
  for (int i = 0; i < MR; ++i) rows[i] = a.data + i * a.row_stride;
  int k = 0;
  do {
    rank1_update<V, MR, NV>(acc, b + k * ldb, [&](int i) { return rows[i][k]; });
  } while (++k < K);
}

template <class V, int MR, int NV>
KOKKOS_FORCEINLINE_FUNCTION void k_loop(V (&acc)[MR][NV], int K, TransposedA a, const float* b, std::ptrdiff_t ldb) {
  const float* ak = a.data;  // MR consecutive values per step
  int k = 0;
  do {
    rank1_update<V, MR, NV>(acc, b + k * ldb, [&](int i) { return ak[i]; });
    ak += a.inner_stride;
  } while (++k < K);
}

/// C[0:MR][0:L*NV] (+)= A[0:MR][0:K] * B[0:K][0:L*NV]: simd::f8, or simd::wide where the
/// compiler targets AVX-512 (twice the FLOPs per instruction, same block). The MR x NV block
/// of C stays in registers for the whole K loop.
template <class V, int MR, int NV, Update kUpdate, class A, class OnRegisters>
KOKKOS_FORCEINLINE_FUNCTION void micro_tile(int K, A a, const float* b, std::ptrdiff_t ldb, float* c,
                                            std::ptrdiff_t ldc, OnRegisters& on_registers, int i0, int j0) {
  constexpr int L = int(sizeof(V) / sizeof(float));
  if (K < 1) {  // an empty reduction: C = 0, or C unchanged
    if (kUpdate == Update::overwrite)
      for (int i = 0; i < MR; ++i)
        for (int x = 0; x < L * NV; ++x) c[i * ldc + x] = 0.0f;
    return;
  }
  V acc[MR][NV];
  RFA_UNROLL_REGISTERS
  for (int i = 0; i < MR; ++i) {
    RFA_UNROLL_REGISTERS
    for (int v = 0; v < NV; ++v)
      acc[i][v] = kUpdate == Update::accumulate ? simd::load_as<V>(c + i * ldc + L * v) : simd::splat<V>(0.0f);
  }
  k_loop<V, MR, NV>(acc, K, a, b, ldb);
  on_registers(acc, i0, j0);
  RFA_UNROLL_REGISTERS
  for (int i = 0; i < MR; ++i) {
    RFA_UNROLL_REGISTERS
    for (int v = 0; v < NV; ++v) simd::store_as(c + i * ldc + L * v, acc[i][v]);
  }
}

/// Rows i0 .. i1 (a multiple of MR apart) of the column strip C[:][j0 : j0 + L*NV]: one
/// micro-tile per MR rows, after_tile() after each, skipped blocks left unwritten.
template <class V, int MR, int NV, Update kUpdate, class A, class AfterTile, class Skip, class OnRegisters>
RFA_MICRO_KERNEL void column_strip(int i0, int i1, int K, A a, const float* b, std::ptrdiff_t ldb, float* c,
                                   std::ptrdiff_t ldc, int j0, AfterTile& after_tile, Skip& skip,
                                   OnRegisters& on_registers) {
  constexpr int width = NV * int(sizeof(V) / sizeof(float));
  for (int i = i0; i < i1; i += MR) {
    if (!skip(i, i + MR, j0, j0 + width))
      micro_tile<V, MR, NV, kUpdate>(K, rows_from(a, i), b + j0, ldb, c + i * ldc + j0, ldc, on_registers, i, j0);
    after_tile();
  }
}

/// C[M][N] (+)= A[M][K] * B[K][N] (A a RowMajorA or a TransposedA, B row-major), with M a
/// multiple of kMicroRows and N a multiple of 8. Column strips of B are the outer loop so a
/// strip (K x 16 floats) stays in L1 while every row block of A streams past it. The MR x 16
/// register block is the classic shape that keeps both FMA pipes busy with two B loads and
/// six broadcasts per step (12 accumulators of AVX2's 16 registers). `after_tile()` runs after
/// each micro-tile: the kernels spread their prefetches of the next tile's rows over a product
/// with it (row_copy.hpp). `skip(i0, i1, j0, j1)` true leaves the block C[i0:i1][j0:j1]
/// unwritten (the kernels' masked blocks, which they overwrite or whose A rows are zero);
/// after_tile() still runs for it. `on_registers(acc, i0, j0)` sees each computed block's
/// accumulators, acc[MR][NV] holding C[i0 : i0 + MR][j0 : j0 + NV lanes], before they are
/// stored (not called for an empty reduction, K = 0): a reduction over them costs a few
/// register operations instead of a pass over C.
template <Update kUpdate, class A, class AfterTile, class Skip, class OnRegisters>
KOKKOS_INLINE_FUNCTION void gemm(int M, int N, int K, A a, const float* b, std::ptrdiff_t ldb, float* c,
                                 std::ptrdiff_t ldc, AfterTile&& after_tile, Skip&& skip, OnRegisters&& on_registers) {
  int j = 0;
#if RFA_NATIVE_VECTORS && defined(__AVX512F__)
  // Where the compiler targets AVX-512 (-march=native on such a machine) the products run on
  // 16-lane registers; everything else in the kernels stays 8-lane (simd.hpp). 12 x 32 blocks
  // where the rows allow (24 of the 32 zmm registers accumulate: each B load feeds twice the
  // FMAs), the last 6 rows as 6 x 32.
  const int m12 = M / (2 * kMicroRows) * (2 * kMicroRows);
  for (; j + 32 <= N; j += 32) {
    column_strip<simd::wide, 2 * kMicroRows, 2, kUpdate>(0, m12, K, a, b, ldb, c, ldc, j, after_tile, skip,
                                                         on_registers);
    column_strip<simd::wide, kMicroRows, 2, kUpdate>(m12, M, K, a, b, ldb, c, ldc, j, after_tile, skip, on_registers);
  }
#endif
  for (; j + 16 <= N; j += 16)
    column_strip<simd::f8, kMicroRows, 2, kUpdate>(0, M, K, a, b, ldb, c, ldc, j, after_tile, skip, on_registers);
  if (j < N)  // one 8-wide strip left (N is a multiple of 8)
    column_strip<simd::f8, kMicroRows, 1, kUpdate>(0, M, K, a, b, ldb, c, ldc, j, after_tile, skip, on_registers);
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

struct IgnoreRegisters {
  template <class V, int MR, int NV>
  KOKKOS_INLINE_FUNCTION void operator()(const V (&)[MR][NV], int, int) const {}
};

template <Update kUpdate, class A, class AfterTile, class Skip>
KOKKOS_INLINE_FUNCTION void gemm(int M, int N, int K, A a, const float* b, std::ptrdiff_t ldb, float* c,
                                 std::ptrdiff_t ldc, AfterTile&& after_tile, Skip&& skip) {
  gemm<kUpdate>(M, N, K, a, b, ldb, c, ldc, after_tile, skip, IgnoreRegisters{});
}

template <Update kUpdate, class A, class AfterTile>
KOKKOS_INLINE_FUNCTION void gemm(int M, int N, int K, A a, const float* b, std::ptrdiff_t ldb, float* c,
                                 std::ptrdiff_t ldc, AfterTile&& after_tile) {
  gemm<kUpdate>(M, N, K, a, b, ldb, c, ldc, after_tile, SkipNothing{});
}

template <Update kUpdate, class A>
KOKKOS_INLINE_FUNCTION void gemm(int M, int N, int K, A a, const float* b, std::ptrdiff_t ldb, float* c,
                                 std::ptrdiff_t ldc) {
  gemm<kUpdate>(M, N, K, a, b, ldb, c, ldc, NothingAfterTile{}, SkipNothing{});
}

KOKKOS_INLINE_FUNCTION int round_up(int x, int m) { return (x + m - 1) / m * m; }

}  // namespace kernels
}  // namespace rfa
