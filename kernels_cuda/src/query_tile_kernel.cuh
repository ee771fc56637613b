// SPDX-License-Identifier: BSD-3-Clause
// What the query-tile kernels share (the forward, and the deterministic backward's dQ pass):
// which (batch, head, query tile) a CTA owns, its walk over the key tiles the mask leaves
// visible, the double-buffered K/V loads, and the two warp-level products of their key loop,
//   scores  += A (16 rows x D, RowFragments) x tile^T          (S = Q K^T, dP = dO V^T)
//   rows_out += P (16 rows x kBlockN, accumulators) x tile     (O += P V, dQ += dS K)
// Fragment layout of mma m16n8k16 (g = lane/4, t = lane%4): an accumulator tile holds rows g
// and g+8, columns 2t and 2t+1; two adjacent 8-column accumulator tiles are one A fragment.
#pragma once

#include <cstdint>

#include "attention_mask.cuh"
#include "device_primitives.cuh"
#include "kernel_args.hpp"

namespace rfa_cuda {
namespace detail {

template <int kBlockM, int kBlockN>
struct QueryTile {
  int b, h, kv_head, q_first, num_k_tiles;
  DeviceMask mask;  // the mask of batch entry b (its own documents with per-sequence documents)

  // Last query tiles first: under a causal mask they have the most keys to visit.
  __device__ explicit QueryTile(const AttentionDims& dims) {
    const int num_q_tiles = (dims.seq_q + kBlockM - 1) / kBlockM;
    const int heads_total = dims.batch * dims.heads;
    const int bh = static_cast<int>(blockIdx.x % heads_total);
    b = bh / dims.heads;
    h = bh % dims.heads;
    kv_head = h / (dims.heads / dims.kv_heads);
    q_first = (num_q_tiles - 1 - static_cast<int>(blockIdx.x / heads_total)) * kBlockM;
    num_k_tiles = (dims.seq_k + kBlockN - 1) / kBlockN;
    mask = dims.mask.for_entry(b);
  }

  // The CTA's first row of a [batch][seq][head][dim] tensor (query side or key side).
  template <typename T>
  __device__ const T* query_rows(const StridedTensor& t) const {
    return static_cast<const T*>(t.data) + b * t.batch + h * t.head + q_first * t.seq;
  }
  template <typename T>
  __device__ const T* key_rows(const StridedTensor& t) const {
    return static_cast<const T*>(t.data) + b * t.batch + kv_head * t.head;
  }

  __device__ TileKind kind_of(const AttentionDims& dims, int k_tile) const {
    return classify_tile(mask, dims.q_positions, dims.k_positions, q_first, kBlockM, dims.seq_q, k_tile * kBlockN,
                         kBlockN, dims.seq_k);
  }
  __device__ int next_visible(const AttentionDims& dims, int k_tile) const {
    while (k_tile < num_k_tiles && kind_of(dims, k_tile) == TileKind::kSkip) ++k_tile;
    return k_tile;
  }
  // Global query row of accumulator element e (0..3) of a warp's 16 x 8 tile: row g or g + 8.
  __device__ int row_of(int warp, int lane, int e) const { return q_first + warp * 16 + lane / 4 + (e / 2) * 8; }
};

// K and V tile k_tile into stage `stage` of the double buffers (rows past seq_k zero-filled).
template <int kBlockN, int D, int kThreads, typename T>
__device__ __forceinline__ void load_key_value_tiles(T* k_tiles, T* v_tiles, const T* k, const T* v,
                                                     const StridedTensor& k_t, const StridedTensor& v_t, int seq_k,
                                                     int k_tile, int stage) {
  const int first = k_tile * kBlockN;
  load_tile_async<kBlockN, D, kThreads>(k_tiles + stage * kBlockN * D, k + first * k_t.seq, k_t.seq, seq_k - first);
  load_tile_async<kBlockN, D, kThreads>(v_tiles + stage * kBlockN * D, v + first * v_t.seq, v_t.seq, seq_k - first);
}

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
