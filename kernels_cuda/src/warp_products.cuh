// SPDX-License-Identifier: BSD-3-Clause
// The two warp-level products the flash kernels' inner loops are made of, on swizzled shared
// tiles (device_primitives.cuh):
//   scores = A x tile^T, A a block of 16 of the warp's rows x D (RowFragments), tile kBlockN
//     rows x D: S = Q K^T and dP = dO V^T in the query-tile kernels, S^T = K Q^T and dP^T =
//     V dO^T in the backward;
//   acc += P x tile, P 16 x kBlockN fp32 accumulators, tile kBlockN rows x D: O += P V and
//     dQ += dS K in the query-tile kernels, dV += P^T dO and dK += dS^T Q in the backward.
// A warp may own several blocks of 16 rows (the forward with 32 rows a warp): each product then
// reads a fragment of the tile once for every block's mma.
// Fragment layout of mma m16n8k16 (g = lane/4, t = lane%4): an accumulator tile holds rows g
// and g+8, columns 2t and 2t+1; two adjacent 8-column accumulator tiles are one A fragment.
#pragma once

#include <cstdint>

#include "device_primitives.cuh"

namespace rfa_cuda {
namespace detail {

// A warp's kBlocks blocks of 16 rows of a swizzled [rows][D] shared tile (block b: rows
// first_row + 16 b to first_row + 16 b + 15) as the A operands of a product over D, fragment kk
// of a block covering columns 16kk..16kk+15: held in registers for the whole key loop (kHeld),
// or read from shared memory at each use where the registers are needed for the accumulators
// (D = 256: 128 of them per thread).
template <typename T, int D, bool kHeld, int kBlocks = 1>
struct RowFragments;

template <typename T, int D, int kBlocks>
struct RowFragments<T, D, true, kBlocks> {
  std::uint32_t frag[kBlocks][D / 16][4];
  __device__ RowFragments(const T* tile, int first_row, int lane) {
#pragma unroll
    for (int b = 0; b < kBlocks; ++b) {
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk) {
        const int row = first_row + 16 * b + lane % 16, col = kk * 16 + (lane / 16) * 8;
        ldmatrix_x4(frag[b][kk], shared_address(tile + swizzled<D>(row, col)));
      }
    }
  }
  __device__ void get(int b, int kk, std::uint32_t (&a)[4]) const {
#pragma unroll
    for (int i = 0; i < 4; ++i) a[i] = frag[b][kk][i];
  }
};

template <typename T, int D, int kBlocks>
struct RowFragments<T, D, false, kBlocks> {
  const T* tile;
  int row, col;  // this lane's row (in block 0) and column offset in every fragment's ldmatrix
  __device__ RowFragments(const T* tile_, int first_row, int lane)
      : tile(tile_), row(first_row + lane % 16), col((lane / 16) * 8) {}
  __device__ void get(int b, int kk, std::uint32_t (&a)[4]) const {
    ldmatrix_x4(a, shared_address(tile + swizzled<D>(row + 16 * b, kk * 16 + col)));
  }
};

// scores[b] (16 x kBlockN, zeroed here) = A_b x tile^T for each of the warp's kBlocks row blocks
// A_b (RowFragments): every fragment of the tile, read from shared memory once, feeds the mma of
// each block, so that a warp of two blocks reads the tile half as often per product as two warps
// of one.
template <typename T, int D, int kBlockN, int kBlocks, typename Rows>
__device__ __forceinline__ void row_blocks_times_tile_transposed(float (&scores)[kBlocks][kBlockN / 8][4],
                                                                 const Rows& rows, const T* tile, int lane) {
#pragma unroll
  for (int b = 0; b < kBlocks; ++b) {
#pragma unroll
    for (int i = 0; i < kBlockN / 8; ++i) scores[b][i][0] = scores[b][i][1] = scores[b][i][2] = scores[b][i][3] = 0.f;
  }
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
    std::uint32_t a[kBlocks][4];
#pragma unroll
    for (int b = 0; b < kBlocks; ++b) rows.get(b, kk, a[b]);
#pragma unroll
    for (int nb = 0; nb < kBlockN / 16; ++nb) {
      std::uint32_t bf[4];
      const int key = nb * 16 + (lane / 16) * 8 + lane % 8;
      const int col = kk * 16 + ((lane / 8) % 2) * 8;
      ldmatrix_x4(bf, shared_address(tile + swizzled<D>(key, col)));
#pragma unroll
      for (int b = 0; b < kBlocks; ++b) {
        mma_16816<T>(scores[b][2 * nb], a[b], bf[0], bf[1]);
        mma_16816<T>(scores[b][2 * nb + 1], a[b], bf[2], bf[3]);
      }
    }
  }
}

// acc[b] (16 x D) += P_b x tile for each of the kBlocks row blocks, P_b the block's 16 x kBlockN
// accumulators (rounded to T as the A operand, 16 keys at a time); each fragment of the tile is
// read once for all blocks.
template <typename T, int D, int kBlockN, int kBlocks>
__device__ __forceinline__ void accumulate_row_blocks_times_tile(float (&acc)[kBlocks][D / 8][4],
                                                                 const float (&p)[kBlocks][kBlockN / 8][4],
                                                                 const T* tile, int lane) {
#pragma unroll
  for (int kk = 0; kk < kBlockN / 16; ++kk) {
    std::uint32_t p_frag[kBlocks][4];
#pragma unroll
    for (int b = 0; b < kBlocks; ++b) accumulators_to_a_fragment<T>(p[b][2 * kk], p[b][2 * kk + 1], p_frag[b]);
#pragma unroll
    for (int db = 0; db < D / 16; ++db) {
      std::uint32_t bf[4];
      const int key = kk * 16 + ((lane / 8) % 2) * 8 + lane % 8;
      const int col = db * 16 + (lane / 16) * 8;
      ldmatrix_x4_trans(bf, shared_address(tile + swizzled<D>(key, col)));
#pragma unroll
      for (int b = 0; b < kBlocks; ++b) {
        mma_16816<T>(acc[b][2 * db], p_frag[b], bf[0], bf[1]);
        mma_16816<T>(acc[b][2 * db + 1], p_frag[b], bf[2], bf[3]);
      }
    }
  }
}

// The one-block forms: scores (16 x kBlockN) = A x tile^T, A one block of 16 rows; acc (16 x D)
// += P x tile.
template <typename T, int D, int kBlockN, typename Rows>
__device__ __forceinline__ void rows_times_tile_transposed(float (&scores)[kBlockN / 8][4], const Rows& rows,
                                                           const T* tile, int lane) {
  row_blocks_times_tile_transposed<T, D, kBlockN, 1>(reinterpret_cast<float(&)[1][kBlockN / 8][4]>(scores), rows, tile,
                                                     lane);
}

template <typename T, int D, int kBlockN>
__device__ __forceinline__ void accumulate_weights_times_tile(float (&acc)[D / 8][4], const float (&p)[kBlockN / 8][4],
                                                              const T* tile, int lane) {
  accumulate_row_blocks_times_tile<T, D, kBlockN, 1>(
      reinterpret_cast<float(&)[1][D / 8][4]>(acc), reinterpret_cast<const float(&)[1][kBlockN / 8][4]>(p), tile, lane);
}

}  // namespace detail
}  // namespace rfa_cuda
