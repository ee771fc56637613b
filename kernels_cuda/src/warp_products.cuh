// SPDX-License-Identifier: BSD-3-Clause
// The two warp-level products the flash kernels' inner loops are made of, on swizzled shared
// tiles (device_primitives.cuh):
//   scores = A x tile^T, A the warp's 16 rows x D (RowFragments), tile kBlockN rows x D:
//     S = Q K^T and dP = dO V^T in the query-tile kernels, S^T = K Q^T and dP^T = V dO^T in the
//     backward;
//   acc += P x tile, P 16 x kBlockN fp32 accumulators, tile kBlockN rows x D: O += P V and
//     dQ += dS K in the query-tile kernels, dV += P^T dO and dK += dS^T Q in the backward.
// Fragment layout of mma m16n8k16 (g = lane/4, t = lane%4): an accumulator tile holds rows g
// and g+8, columns 2t and 2t+1; two adjacent 8-column accumulator tiles are one A fragment.
#pragma once

#include <cstdint>

#include "device_primitives.cuh"

namespace rfa_cuda {
namespace detail {

// The warp's 16 rows of a swizzled [rows][D] shared tile as the A operand of a product over D,
// fragment kk covering columns 16kk..16kk+15: held in registers for the whole key loop (kHeld),
// or read from shared memory at each use where the registers are needed for the accumulator
// (D = 256: 128 of them per thread).
template <typename T, int D, bool kHeld>
struct RowFragments;

template <typename T, int D>
struct RowFragments<T, D, true> {
  std::uint32_t frag[D / 16][4];
  __device__ RowFragments(const T* tile, int warp, int lane) {
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      const int row = warp * 16 + lane % 16, col = kk * 16 + (lane / 16) * 8;
      ldmatrix_x4(frag[kk], shared_address(tile + swizzled<D>(row, col)));
    }
  }
  __device__ void get(int kk, std::uint32_t (&a)[4]) const {
#pragma unroll
    for (int i = 0; i < 4; ++i) a[i] = frag[kk][i];
  }
};

template <typename T, int D>
struct RowFragments<T, D, false> {
  const T* tile;
  int row, col;  // this lane's row and column offset in every fragment's ldmatrix
  __device__ RowFragments(const T* tile_, int warp, int lane)
      : tile(tile_), row(warp * 16 + lane % 16), col((lane / 16) * 8) {}
  __device__ void get(int kk, std::uint32_t (&a)[4]) const {
    ldmatrix_x4(a, shared_address(tile + swizzled<D>(row, kk * 16 + col)));
  }
};

// scores (16 x kBlockN, zeroed here) = A x tile^T, A the warp's 16 rows (RowFragments).
template <typename T, int D, int kBlockN, typename Rows>
__device__ __forceinline__ void rows_times_tile_transposed(float (&scores)[kBlockN / 8][4], const Rows& rows,
                                                           const T* tile, int lane) {
#pragma unroll
  for (int i = 0; i < kBlockN / 8; ++i) scores[i][0] = scores[i][1] = scores[i][2] = scores[i][3] = 0.f;
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
    std::uint32_t a[4];
    rows.get(kk, a);
#pragma unroll
    for (int nb = 0; nb < kBlockN / 16; ++nb) {
      std::uint32_t bf[4];
      const int key = nb * 16 + (lane / 16) * 8 + lane % 8;
      const int col = kk * 16 + ((lane / 8) % 2) * 8;
      ldmatrix_x4(bf, shared_address(tile + swizzled<D>(key, col)));
      mma_16816<T>(scores[2 * nb], a, bf[0], bf[1]);
      mma_16816<T>(scores[2 * nb + 1], a, bf[2], bf[3]);
    }
  }
}

// acc (16 x D) += P x tile, P the 16 x kBlockN accumulators (rounded to T as the A operand).
template <typename T, int D, int kBlockN>
__device__ __forceinline__ void accumulate_weights_times_tile(float (&acc)[D / 8][4], const float (&p)[kBlockN / 8][4],
                                                              const T* tile, int lane) {
#pragma unroll
  for (int kk = 0; kk < kBlockN / 16; ++kk) {
    std::uint32_t p_frag[4];
    accumulators_to_a_fragment<T>(p[2 * kk], p[2 * kk + 1], p_frag);
#pragma unroll
    for (int db = 0; db < D / 16; ++db) {
      std::uint32_t bf[4];
      const int key = kk * 16 + ((lane / 8) % 2) * 8 + lane % 8;
      const int col = db * 16 + (lane / 16) * 8;
      ldmatrix_x4_trans(bf, shared_address(tile + swizzled<D>(key, col)));
      mma_16816<T>(acc[2 * db], p_frag, bf[0], bf[1]);
      mma_16816<T>(acc[2 * db + 1], p_frag, bf[2], bf[3]);
    }
  }
}

}  // namespace detail
}  // namespace rfa_cuda
