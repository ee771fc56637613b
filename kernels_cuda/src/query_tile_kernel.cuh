// SPDX-License-Identifier: BSD-3-Clause
// What the query-tile kernels share (the forward, and the deterministic backward's dQ pass):
// which (batch, head, query tile) a CTA owns, its walk over the key tiles the mask leaves
// visible, and the double-buffered K/V loads; their key loops' products are warp_products.cuh's.
#pragma once

#include <cstdint>

#include "attention_mask.cuh"
#include "device_primitives.cuh"
#include "kernel_args.hpp"
#include "warp_products.cuh"

namespace rfa_cuda {
namespace detail {

template <int kBlockM, int kBlockN>
struct QueryTile {
  int b, h, kv_head, q_first;
  // The walk's key tiles: it begins at first_k_tile and ends at num_k_tiles, and those in
  // [full_k_begin, full_k_end) are full without being classified (key_tile_walk).
  int first_k_tile, num_k_tiles, full_k_begin, full_k_end;
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
    mask = dims.mask.for_entry(b);
    const KeyWalk walk =
        key_tile_walk(mask, dims.q_positions, dims.k_positions, q_first, kBlockM, dims.seq_q, kBlockN, dims.seq_k);
    first_k_tile = walk.begin_tile;
    num_k_tiles = walk.end_tile;
    full_k_begin = walk.full_begin;
    full_k_end = walk.full_end;
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
    if (k_tile >= full_k_begin && k_tile < full_k_end) return TileKind::kFull;
    return classify_tile(mask, dims.q_positions, dims.k_positions, q_first, kBlockM, dims.seq_q, k_tile * kBlockN,
                         kBlockN, dims.seq_k);
  }
  // The first key tile from k_tile on that the mask does not hide (num_k_tiles if none), its
  // kind in `kind`: a walk classifies each tile once, not again where it computes it.
  __device__ int next_visible(const AttentionDims& dims, int k_tile, TileKind& kind) const {
    for (; k_tile < num_k_tiles; ++k_tile) {
      kind = kind_of(dims, k_tile);
      if (kind != TileKind::kSkip) break;
    }
    return k_tile;
  }
  // The walk's first key tile that the mask does not hide, its kind in `kind` (the tiles before
  // first_k_tile are hidden); the walk goes on with next_visible, so that first_k_tile is not
  // kept through the kernels' loops.
  __device__ int first_visible(const AttentionDims& dims, TileKind& kind) const {
    return next_visible(dims, first_k_tile, kind);
  }
  // The tile's rows come in blocks of 16, block i holding rows 16i to 16i + 15 (a warp owns
  // one block, or two in the forward with 32 rows a warp).
  // Global query row of accumulator element e (0..3) of a block's 16 x 8 tile: row g or g + 8.
  __device__ int row_of(int block, int lane, int e) const { return q_first + block * 16 + lane / 4 + (e / 2) * 8; }
  // Sets to -inf the scores of a partial key tile that the mask hides: s holds a block's 16
  // rows against the tile's kBlockN keys as accumulators (mask_fragment).
  __device__ void mask_scores(float (&s)[kBlockN / 8][4], const AttentionDims& dims, int block, int lane,
                              int k_tile) const {
    mask_fragment<FragmentRows::kQueries>(s, mask, dims.q_positions, dims.k_positions, dims.seq_q, dims.seq_k,
                                          q_first + block * 16, k_tile * kBlockN, lane);
  }
};

// K (head dim D) and V (DV) tile k_tile into stage `stage` of the double buffers (rows past
// seq_k zero-filled).
template <int kBlockN, int D, int DV, int kThreads, typename T>
__device__ __forceinline__ void load_key_value_tiles(T* k_tiles, T* v_tiles, const T* k, const T* v,
                                                     const StridedTensor& k_t, const StridedTensor& v_t, int seq_k,
                                                     int k_tile, int stage) {
  const int first = k_tile * kBlockN;
  load_tile_async<kBlockN, D, kThreads>(k_tiles + stage * kBlockN * D, k + first * k_t.seq, k_t.seq, seq_k - first);
  load_tile_async<kBlockN, DV, kThreads>(v_tiles + stage * kBlockN * DV, v + first * v_t.seq, v_t.seq, seq_k - first);
}

}  // namespace detail
}  // namespace rfa_cuda
