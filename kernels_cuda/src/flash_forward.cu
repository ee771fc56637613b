// SPDX-License-Identifier: BSD-3-Clause
// FlashAttention-2 forward: one CTA owns a tile of 128 query rows of one (batch, head),
// streams the key/value tiles through shared memory (cp.async, two stages) and keeps the
// output accumulator and the online-softmax state of its rows in registers.
//
// Two layouts of the tile's rows over warps (fragment layout: query_tile_kernel.cuh):
//  - 16 rows a warp, 8 warps (the default);
//  - 32 rows a warp, 4 warps: every fragment of K and V a warp reads from shared memory feeds
//    the mma of both its blocks of 16 rows, so a key tile's K and V are read 4 times a CTA, not
//    8, for the same tensor work (FlashAttention-2's own layout), at twice the accumulator
//    registers a thread. For value head dims up to 128; chosen by
//    RFA_CUDA_SM80_FORWARD_ROWS_PER_WARP (sm80_layout_settings.hpp) until a GPU run has measured
//    which is faster.
// Q and K have head dim D, V and out DV (equal but for MLA's 192 / 128). A thread holds D/4
// registers of query fragments and DV/2 of output accumulator per block of 16 rows; where the two
// would pass 112 (D = DV = 192 or 256; at 32 rows a warp also D = 128 and MLA's 192 / 128), the
// query fragments are read from shared memory at each key tile instead. At DV = 256 a stage
// holds 32 keys (128 KB of shared memory in all, which an A100 has).
#include <cmath>
#include <cstdint>

#include "launch_dispatch.cuh"
#include "query_tile_kernel.cuh"
#include "row_epilogue.cuh"
#include "sm80_layout_settings.hpp"

namespace rfa_cuda {
namespace detail {
namespace {

template <int kHeadDim, int kValueDim, int kRowBlocks>
struct ForwardConfig {
  static constexpr int kWarps = 8 / kRowBlocks;  // kRowBlocks blocks of 16 query rows a warp
  static constexpr int kThreads = 32 * kWarps;
  static constexpr int kBlockM = 16 * kRowBlocks * kWarps;    // query rows per CTA: 128
  static constexpr int kBlockN = kValueDim == 256 ? 32 : 64;  // key rows per pipeline stage
  // Q fragments in registers (D/4 per thread and block) while they and the accumulator (DV/2)
  // leave room.
  static constexpr bool kQueryHeld = kRowBlocks * (kHeadDim / 4 + kValueDim / 2) <= 112;
  // Q tile + two stages of K and V tiles, 16-bit elements.
  static constexpr int kSmemBytes = (kBlockM * kHeadDim + 2 * kBlockN * (kHeadDim + kValueDim)) * 2;
};
// The 16-rows-a-warp layout, whose shared memory flash_forward_shared_bytes reports (the other
// asks for the same: launch_forward checks it for every pair it launches).
template <int kHeadDim, int kValueDim>
using NarrowForwardConfig = ForwardConfig<kHeadDim, kValueDim, 1>;

// kMerge: out (fp32) and lse already hold the normalized result over earlier key blocks, and
// the epilogue merges this block into them in registers (the ring's online softmax), which
// saves the engine a separate merge pass over out and lse. A compile-time switch, so the plain
// kernel's registers are not touched by it.
// One block per SM at least (the bounds' second argument) lets ptxas take the registers it
// needs: without it the d = 32 kernel stops at 128 and spills (perf/RESULTS.md, "2026-11-30 —
// head dim 256 and MLA's 192 / 128 in the sm80 kernels: registers and spills (compile only)").
template <typename T, int kHeadDim, int kValueDim, int kRowBlocks, bool kMerge>
__global__ void __launch_bounds__(ForwardConfig<kHeadDim, kValueDim, kRowBlocks>::kThreads, 1)
    flash_forward_kernel(const ForwardArgs args) {
  using Config = ForwardConfig<kHeadDim, kValueDim, kRowBlocks>;
  constexpr int kBlockM = Config::kBlockM, kBlockN = Config::kBlockN, kThreads = Config::kThreads;
  constexpr int D = kHeadDim, DV = kValueDim, R = kRowBlocks;

  extern __shared__ __align__(128) unsigned char shared_bytes[];
  T* q_tile = reinterpret_cast<T*>(shared_bytes);
  T* k_tiles = q_tile + kBlockM * D;       // [2][kBlockN][D]
  T* v_tiles = k_tiles + 2 * kBlockN * D;  // [2][kBlockN][DV]

  const AttentionDims& dims = args.dims;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int first_block = warp * R;  // the warp's blocks of 16 rows: first_block to first_block + R - 1
  const QueryTile<kBlockM, kBlockN> tile(dims);
  const T* k = tile.template key_rows<T>(args.k);
  const T* v = tile.template key_rows<T>(args.v);

  load_tile_async<kBlockM, D, kThreads>(q_tile, tile.template query_rows<T>(args.q), args.q.seq,
                                        dims.seq_q - tile.q_first);
  TileKind kind = TileKind::kSkip;
  int k_tile = tile.first_visible(dims, kind);
  if (k_tile < tile.num_k_tiles)
    load_key_value_tiles<kBlockN, D, DV, kThreads>(k_tiles, v_tiles, k, v, args.k, args.v, dims.seq_k, k_tile, 0);
  cp_async_commit();

  float acc[R][DV / 8][4];
#pragma unroll
  for (int b = 0; b < R; ++b) {
#pragma unroll
    for (int i = 0; i < DV / 8; ++i) acc[b][i][0] = acc[b][i][1] = acc[b][i][2] = acc[b][i][3] = 0.f;
  }
  // Running max (in the exp2 domain, i.e. times scale*log2e) and partial row sums of each
  // block's rows g and g+8; the sums stay per thread and are reduced over the quad once at the end.
  float row_max[R][2], row_sum[R][2];
#pragma unroll
  for (int b = 0; b < R; ++b) {
    row_max[b][0] = row_max[b][1] = -INFINITY;
    row_sum[b][0] = row_sum[b][1] = 0.f;
  }

  cp_async_wait_all();
  __syncthreads();

  // The warp's query rows as A fragments for the whole key loop.
  const RowFragments<T, D, Config::kQueryHeld, R> q_rows(q_tile, first_block * 16, lane);

  int stage = 0;
  while (k_tile < tile.num_k_tiles) {
    // The other stage was last read in the previous iteration, which every warp has left
    // (barrier at the end of the loop), so it can be refilled while this tile computes.
    TileKind next_kind = TileKind::kSkip;
    const int next = tile.next_visible(dims, k_tile + 1, next_kind);
    if (next < tile.num_k_tiles)
      load_key_value_tiles<kBlockN, D, DV, kThreads>(k_tiles, v_tiles, k, v, args.k, args.v, dims.seq_k, next,
                                                     stage ^ 1);
    cp_async_commit();

    const T* k_s = k_tiles + stage * kBlockN * D;
    const T* v_s = v_tiles + stage * kBlockN * DV;

    // S = Q K^T for each block's 16 rows x kBlockN keys.
    float s[R][kBlockN / 8][4];
    row_blocks_times_tile_transposed<T, D, kBlockN>(s, q_rows, k_s, lane);
#pragma unroll
    for (int b = 0; b < R; ++b) {
      cap_scores(dims.cap, s[b]);  // before the mask
      if (kind == TileKind::kPartial) tile.mask_scores(s[b], dims, first_block + b, lane, k_tile);
    }

    // Online softmax: rescale what was accumulated by exp2(old_max - new_max).
#pragma unroll
    for (int b = 0; b < R; ++b) {
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        float tile_max = -INFINITY;
#pragma unroll
        for (int nb = 0; nb < kBlockN / 8; ++nb)
          tile_max = fmaxf(tile_max, fmaxf(s[b][nb][2 * half], s[b][nb][2 * half + 1]));
        tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));
        tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 2));
        const float new_max = fmaxf(row_max[b][half], tile_max * dims.scale_log2);
        // A row that has seen only masked keys keeps max -inf; subtracting 0 instead keeps
        // every exp2 at exp2(-inf) = 0 rather than NaN.
        const float base = new_max == -INFINITY ? 0.f : new_max;
        const float rescale = exp2f(row_max[b][half] - base);
        row_max[b][half] = new_max;
        row_sum[b][half] *= rescale;
#pragma unroll
        for (int db = 0; db < DV / 8; ++db) {
          acc[b][db][2 * half] *= rescale;
          acc[b][db][2 * half + 1] *= rescale;
        }
#pragma unroll
        for (int nb = 0; nb < kBlockN / 8; ++nb) {
#pragma unroll
          for (int e = 2 * half; e < 2 * half + 2; ++e) {
            const float p = exp2f(fmaf(s[b][nb][e], dims.scale_log2, -base));
            s[b][nb][e] = p;
            row_sum[b][half] += p;
          }
        }
      }
    }

    // O += P V: the S accumulators of two adjacent 8-key blocks are exactly the A fragment
    // of one 16-key step, so P never leaves registers.
    accumulate_row_blocks_times_tile<T, DV, kBlockN>(acc, s, v_s, lane);

    k_tile = next;
    kind = next_kind;
    stage ^= 1;
    cp_async_wait_all();
    __syncthreads();
  }

  // Epilogue: normalize, write out and lse (row_epilogue.cuh).
  const std::int64_t lse_row0 = (static_cast<std::int64_t>(tile.b) * dims.heads + tile.h) * dims.seq_q;
  float running_lse[R][2];
#pragma unroll
  for (int b = 0; b < R; ++b) running_lse[b][0] = running_lse[b][1] = -INFINITY;
  if constexpr (kMerge) {
    // Every lane of a row's quad reads the running lse before the quad's first lane overwrites it.
#pragma unroll
    for (int b = 0; b < R; ++b) {
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int row = tile.row_of(first_block + b, lane, 2 * half);
        if (row < dims.seq_q) running_lse[b][half] = args.lse[lse_row0 + row];
      }
    }
    __syncwarp();
  }
  // The quad reductions first, while the whole warp is converged.
#pragma unroll
  for (int b = 0; b < R; ++b) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      row_sum[b][half] += __shfl_xor_sync(0xffffffffu, row_sum[b][half], 1);
      row_sum[b][half] += __shfl_xor_sync(0xffffffffu, row_sum[b][half], 2);
    }
  }
#pragma unroll
  for (int b = 0; b < R; ++b) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int row = tile.row_of(first_block + b, lane, 2 * half);
      if (row >= dims.seq_q) continue;
      RowEpilogue e;
      if (!row_epilogue(kMerge, row_sum[b][half], row_max[b][half], running_lse[b][half], e)) continue;
      const float scale_block = e.block, scale_running = e.running;
      if (lane % 4 == 0) args.lse[lse_row0 + row] = e.lse;
      const std::int64_t offset = tile.b * args.out.batch + row * args.out.seq + tile.h * args.out.head;
      // The row's running values, all loaded before any store: loads and stores to one row would
      // otherwise alternate, each load waiting out the memory latency.
      float2 running[kMerge ? DV / 8 : 1];
#pragma unroll
      for (int db = 0; db < (kMerge ? DV / 8 : 1); ++db) running[db] = make_float2(0.f, 0.f);
      if (kMerge && scale_running != 0.f) {  // a fresh row's out may hold anything, NaN included
        const float2* row_out = reinterpret_cast<const float2*>(static_cast<const float*>(args.out.data) + offset);
#pragma unroll
        for (int db = 0; db < (kMerge ? DV / 8 : 1); ++db) running[db] = row_out[db * 4 + lane % 4];
      }
#pragma unroll
      for (int db = 0; db < DV / 8; ++db) {
        const int col = db * 8 + (lane % 4) * 2;
        float v0 = acc[b][db][2 * half] * scale_block, v1 = acc[b][db][2 * half + 1] * scale_block;
        if (kMerge || args.out_fp32) {
          if constexpr (kMerge) {
            v0 += scale_running * running[db].x;
            v1 += scale_running * running[db].y;
          }
          *reinterpret_cast<float2*>(static_cast<float*>(args.out.data) + offset + col) = make_float2(v0, v1);
        } else {
          *reinterpret_cast<std::uint32_t*>(static_cast<T*>(args.out.data) + offset + col) = pack2<T>(v0, v1);
        }
      }
    }
  }
}

template <typename T, int D, int DV, int R>
cudaError_t launch_forward(const ForwardArgs& args, cudaStream_t stream) {
  using Config = ForwardConfig<D, DV, R>;
  static_assert(Config::kSmemBytes == NarrowForwardConfig<D, DV>::kSmemBytes,
                "both layouts ask for the shared memory flash_forward_shared_bytes reports");
  const std::int64_t tiles = (args.dims.seq_q + Config::kBlockM - 1) / Config::kBlockM;
  const std::int64_t blocks = tiles * args.dims.batch * args.dims.heads;
  if (args.merge)
    return launch_tiles(flash_forward_kernel<T, D, DV, R, true>, args, blocks, Config::kThreads, Config::kSmemBytes,
                        stream);
  return launch_tiles(flash_forward_kernel<T, D, DV, R, false>, args, blocks, Config::kThreads, Config::kSmemBytes,
                      stream);
}

}  // namespace

int flash_forward_shared_bytes(int head_dim, int value_dim) {
  return config_shared_bytes<NarrowForwardConfig>(Sm80DimPairs{}, head_dim, value_dim);
}

cudaError_t launch_flash_forward(const ForwardArgs& args, ElementType dtype, cudaStream_t stream) {
  return dispatch_dtype_dims(Sm80DimPairs{}, dtype, args.dims.head_dim, args.dims.value_dim,
                             [&](auto element, auto head_dim, auto value_dim) {
                               using T = decltype(element);
                               constexpr int D = decltype(head_dim)::value, DV = decltype(value_dim)::value;
                               if constexpr (DV <= kWideForwardValueDimMax) {
                                 if (args.rows_per_warp == 32) return launch_forward<T, D, DV, 2>(args, stream);
                               }
                               return launch_forward<T, D, DV, 1>(args, stream);
                             });
}

}  // namespace detail
}  // namespace rfa_cuda
