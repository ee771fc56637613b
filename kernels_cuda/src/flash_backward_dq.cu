// SPDX-License-Identifier: BSD-3-Clause
// dQ of the backward without atomics, for the deterministic mode: one CTA owns kBlockM query
// rows of one (batch, head), so every dQ row has exactly one writer and sums its key tiles in
// a fixed order. The CTA keeps its dQ accumulator in registers (Q and dO as well, up to
// d = 128) and streams K and V (cp.async, two stages), recomputing S = Q K^T and dP = dO V^T
// per key tile:
//   P = exp(scale S - lse),  dS = P (dP - D),  dQ += scale dS K.
// It is the forward's loop (query_tile_kernel.cuh) with a second score product and no online
// softmax (lse is final).
#include <cmath>
#include <cstdint>

#include "launch_dispatch.cuh"
#include "query_tile_kernel.cuh"
#include "softmax_probability.cuh"

namespace rfa_cuda {
namespace detail {
namespace {

template <int kHeadDim, int kValueDim>
struct DqConfig {
  // Q, dQ and K have head dim D, dO and V DV. Past 384 columns in all (d = 256), 4 warps keep the
  // tiles within an A100's shared memory (128 KB).
  static constexpr int kWarps = kHeadDim + kValueDim > 384 ? 4 : 8;
  static constexpr int kThreads = 32 * kWarps;
  static constexpr int kBlockM = 16 * kWarps;  // query rows per CTA
  // Key rows per stage. d = 128 holds dQ (64), Q and dO fragments (32 + 32) in registers: 32
  // keys keep S and dP at 16 registers each, under the 255 limit. 64 up to d = 64 (at d = 32, a
  // 32-row tile would be fewer 16-byte chunks than threads).
  static constexpr int kBlockN = kHeadDim <= 64 ? 64 : 32;
  // Q and dO fragments in registers (D/4 + DV/4 per thread) while they and dQ (D/2) fit in 128;
  // otherwise (d = 256, MLA's 192 / 128) read from shared memory at each key tile.
  static constexpr bool kRowsHeld = kHeadDim / 4 + kValueDim / 4 + kHeadDim / 2 <= 128;
  // Q and dO tiles + two stages of K and V tiles, 16-bit elements.
  static constexpr int kSmemBytes = (kBlockM + 2 * kBlockN) * (kHeadDim + kValueDim) * 2;
};

constexpr float kLog2e = 1.44269504088896340736f;

// One block per SM at least (the bounds' second argument) lets ptxas take the registers it
// needs: without it the d = 32 kernel stops at 128 and spills (perf/RESULTS.md, "2026-12-05 — the
// sm80 kernels without the cap's test per score; a partial tile's positions found once (compile
// only)").
template <typename T, int kHeadDim, int kValueDim>
__global__ void __launch_bounds__(DqConfig<kHeadDim, kValueDim>::kThreads, 1)
    flash_backward_dq_kernel(const DqArgs args) {
  using Config = DqConfig<kHeadDim, kValueDim>;
  constexpr int kBlockM = Config::kBlockM, kBlockN = Config::kBlockN, kThreads = Config::kThreads;
  constexpr int D = kHeadDim, DV = kValueDim;

  extern __shared__ __align__(128) unsigned char shared_bytes[];
  T* q_tile = reinterpret_cast<T*>(shared_bytes);
  T* do_tile = q_tile + kBlockM * D;       // [kBlockM][DV]
  T* k_tiles = do_tile + kBlockM * DV;     // [2][kBlockN][D]
  T* v_tiles = k_tiles + 2 * kBlockN * D;  // [2][kBlockN][DV]

  const AttentionDims& dims = args.dims;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const QueryTile<kBlockM, kBlockN> tile(dims);
  const T* k = tile.template key_rows<T>(args.k);
  const T* v = tile.template key_rows<T>(args.v);

  load_tile_async<kBlockM, D, kThreads>(q_tile, tile.template query_rows<T>(args.q), args.q.seq,
                                        dims.seq_q - tile.q_first);
  load_tile_async<kBlockM, DV, kThreads>(do_tile, tile.template query_rows<T>(args.dout), args.dout.seq,
                                         dims.seq_q - tile.q_first);
  TileKind kind = TileKind::kSkip;
  int k_tile = tile.first_visible(dims, kind);
  if (k_tile < tile.num_k_tiles)
    load_key_value_tiles<kBlockN, D, DV, kThreads>(k_tiles, v_tiles, k, v, args.k, args.v, dims.seq_k, k_tile, 0);
  cp_async_commit();

  // lse (in the exp2 domain) and D of this thread's two rows, g and g+8 of the warp's 16.
  // A row past the sequence, or one that sees no key (lse = -inf), gets P = 0 everywhere.
  float row_lse2[2], row_delta[2];
  bool row_live[2];
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int row = tile.row_of(warp, lane, 2 * half);
    const std::int64_t at = (static_cast<std::int64_t>(tile.b) * dims.heads + tile.h) * dims.seq_q + row;
    const float lse = row < dims.seq_q ? args.lse[at] : -INFINITY;
    row_live[half] = lse != -INFINITY;
    row_lse2[half] = row_live[half] ? lse * kLog2e : 0.f;
    row_delta[half] = row < dims.seq_q ? args.delta[at] : 0.f;
  }

  float acc[D / 8][4];
#pragma unroll
  for (int i = 0; i < D / 8; ++i) acc[i][0] = acc[i][1] = acc[i][2] = acc[i][3] = 0.f;

  cp_async_wait_all();
  __syncthreads();

  // The warp's 16 query rows of Q and dO as A fragments.
  const RowFragments<T, D, Config::kRowsHeld> q_rows(q_tile, warp * 16, lane);
  const RowFragments<T, DV, Config::kRowsHeld> do_rows(do_tile, warp * 16, lane);

  int stage = 0;
  while (k_tile < tile.num_k_tiles) {
    // The other stage was last read in the previous iteration, which every warp has left.
    TileKind next_kind = TileKind::kSkip;
    const int next = tile.next_visible(dims, k_tile + 1, next_kind);
    if (next < tile.num_k_tiles)
      load_key_value_tiles<kBlockN, D, DV, kThreads>(k_tiles, v_tiles, k, v, args.k, args.v, dims.seq_k, next,
                                                     stage ^ 1);
    cp_async_commit();

    const T* k_s = k_tiles + stage * kBlockN * D;
    const T* v_s = v_tiles + stage * kBlockN * DV;

    float s[kBlockN / 8][4], dp[kBlockN / 8][4];
    rows_times_tile_transposed<T, D, kBlockN>(s, q_rows, k_s, lane);     // S = Q K^T
    rows_times_tile_transposed<T, DV, kBlockN>(dp, do_rows, v_s, lane);  // dP = dO V^T

    // dP - D in dp, S capped and dP - D times the cap's slope where scores are soft-capped.
    cap_scores_less_row_term(dims.cap, s, dp, [&](int, int e) { return row_delta[e / 2]; });
    // The mask after the cap, whose tanh would make its -inf finite.
    if (kind == TileKind::kPartial) {
      tile.mask_scores(s, dims, warp, lane, k_tile);
    }

    // P = exp2(scale*log2e S - lse*log2e), 0 where masked or in a row that sees no key; dS = P
    // (dP - D), kept in dp.
#pragma unroll
    for (int nb = 0; nb < kBlockN / 8; ++nb) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int half = e / 2;
        const bool shown = row_live[half] && s[nb][e] != -INFINITY;
        const float p = shown ? probability_from_log2(fmaf(s[nb][e], dims.scale_log2, -row_lse2[half])) : 0.f;
        dp[nb][e] *= p;
      }
    }

    // dQ += dS K: K is read transposed, as V is for the forward's P V.
    accumulate_weights_times_tile<T, D, kBlockN>(acc, dp, k_s, lane);

    k_tile = next;
    kind = next_kind;
    stage ^= 1;
    cp_async_wait_all();
    __syncthreads();
  }

  // Epilogue: scale once; each row has this CTA as its only writer.
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int row = tile.row_of(warp, lane, 2 * half);
    if (row >= dims.seq_q) continue;
    const std::int64_t offset = tile.b * args.dq.batch + row * args.dq.seq + tile.h * args.dq.head;
#pragma unroll
    for (int db = 0; db < D / 8; ++db) {
      const int col = db * 8 + (lane % 4) * 2;
      const float g0 = dims.scale * acc[db][2 * half], g1 = dims.scale * acc[db][2 * half + 1];
      store_or_add_pair<T>(args.dq.data, offset + col, g0, g1, args.store_dq);
    }
  }
}

}  // namespace

int flash_backward_dq_shared_bytes(int head_dim, int value_dim) {
  return config_shared_bytes<DqConfig>(Sm80DimPairs{}, head_dim, value_dim);
}

cudaError_t launch_flash_backward_dq(const DqArgs& args, ElementType dtype, cudaStream_t stream) {
  return dispatch_dtype_dims(
      Sm80DimPairs{}, dtype, args.dims.head_dim, args.dims.value_dim, [&](auto element, auto head_dim, auto value_dim) {
        using T = decltype(element);
        constexpr int D = decltype(head_dim)::value, DV = decltype(value_dim)::value;
        using Config = DqConfig<D, DV>;
        const std::int64_t tiles = (args.dims.seq_q + Config::kBlockM - 1) / Config::kBlockM;
        return launch_tiles(flash_backward_dq_kernel<T, D, DV>, args, tiles * args.dims.batch * args.dims.heads,
                            Config::kThreads, Config::kSmemBytes, stream);
      });
}

}  // namespace detail
}  // namespace rfa_cuda
