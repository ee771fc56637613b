// SPDX-License-Identifier: BSD-3-Clause
// FlashAttention-2 backward: one CTA owns a tile of kBlockN key rows (64 or 128, 16 a warp) of
// one (batch, kv head) and keeps their dK, dV in registers while it streams every query tile of
// every query head of its GQA group (Q, dO, lse, D through shared memory, cp.async, two
// stages). dK and dV are therefore complete when the CTA ends and are written (or added) once,
// without atomics; dQ receives each tile's contribution with fp32 atomics.
//
// Warp w owns keys 16w..16w+15 and computes S^T = K Q^T and dP^T = V dO^T directly in that
// orientation, so P^T and dS^T are already A fragments for dV += P^T dO and dK += dS^T Q.
// dS^T goes through shared memory once for dQ += dS K, where warps split queries instead.
// In the deterministic mode (kAtomicDq false) this kernel computes dK and dV only and
// flash_backward_dq.cu computes dQ.
//
// Q, K, dQ and dK have head dim D; V, dO and dV have DV (equal but for MLA's 192 / 128). Where
// dK and dV together would take more than 128 accumulator registers per thread (D + DV > 256:
// d = 256, and 192 / 128), the kernel runs twice, once for dV (S^T and P^T only) and once for
// dK and dQ, each pass holding one accumulator; S^T = K Q^T is computed in both, one product in
// six more than one pass would do.
#include <cmath>
#include <cstdint>

#include "accumulator_row_quads.cuh"
#include "attention_mask.cuh"
#include "device_primitives.cuh"
#include "kernel_args.hpp"
#include "launch_dispatch.cuh"
#include "sm80_layout_settings.hpp"
#include "softmax_probability.cuh"
#include "warp_products.cuh"

namespace rfa_cuda {
namespace detail {
namespace {

// What one launch accumulates: both key-side gradients, or one of them (D + DV > 256, where one
// accumulator takes all the registers a pass can spare).
enum class KeyGradients { kBoth, kValueOnly, kKeyOnly };

template <int D, int DV, int kKeyTile>
struct BackwardConfig {
  // Each warp owns 16 keys whatever the tile (d = 128: 128 accumulator registers per thread for
  // dK and dV), so the tile is the CTA's warp count: 64 keys (4 warps) or 128 (8 warps, which
  // read each query tile and add its dQ once for twice the keys, at twice the shared memory for
  // K and V). sm80_layout_settings.hpp says which runs. Past 256 columns in all, one accumulator
  // per pass (the passes above), 64 keys.
  static constexpr int kHeadDim = D, kValueDim = DV;  // Q and K's, V's
  static constexpr int kColumns = kHeadDim + kValueDim;
  static constexpr bool kTwoPasses = kColumns > 256;
  static_assert(kKeyTile == 64 || (kKeyTile == 128 && !kTwoPasses), "key tiles of 64, or 128 up to 256 columns");
  static constexpr int kWarps = kKeyTile / 16;
  static constexpr int kThreads = 32 * kWarps;
  static constexpr int kBlockN = kKeyTile;  // key rows per CTA
  // Query rows per pipeline stage: S^T and dP^T take kBlockM/2 registers each on top of dK,
  // dV; 32 keeps d = 128 free of spills.
  static constexpr int kBlockM = kColumns <= 128 ? 64 : 32;
  // dQ: warps split the kBlockM queries in groups of 16, then the head dimension, in chunks
  // of at most 64 columns that divide a warp's share (192: 96 in two chunks of 48).
  static constexpr int kQueryGroups = kBlockM / 16;
  static constexpr int kDimSplit = kWarps / kQueryGroups;
  static constexpr int kDimPerWarp = kHeadDim / kDimSplit;
  static constexpr int kDimChunk = kDimPerWarp <= 64 ? kDimPerWarp : kDimPerWarp % 64 == 0 ? 64 : kDimPerWarp / 2;
  static_assert(kBlockM % 16 == 0 && kQueryGroups * kDimSplit == kWarps && kDimSplit * kDimPerWarp == kHeadDim,
                "every dQ column of every query group has exactly one warp");
  static_assert(kDimPerWarp % kDimChunk == 0 && kDimChunk % 16 == 0 && kDimChunk <= 64, "dQ chunks");
  static constexpr int kSmemElements = kBlockN * kColumns                 // K, V
                                       + 2 * kBlockM * kColumns           // Q, dO, two stages each
                                       + kBlockN * kBlockM;               // dS^T
  static constexpr int kSmemBytes = kSmemElements * 2 + 4 * kBlockM * 4;  // + lse, D (2 stages)
};

constexpr float kLog2e = 1.44269504088896340736f;

// dQ += scale * acc for a warp's 16 query rows x kColumns columns (acc: kColumns / 8
// accumulator tiles), at dq (row 0, column 0; rows `row_stride` apart), rows from `rows` on past
// the sequence's end. Other CTAs add other key tiles' terms to the same elements: fp32 atomics,
// the bound of this kernel (perf/RESULTS.md, "2026-11-23 — CUDA kernels on an H100
// (`kernels_cuda/gpu_check.sh`, re-measured)"). Hopper reduces four columns in one 16-byte
// operation (each lane first trades a pair with its partner, accumulator_row_quads.cuh), a
// quarter of the operations of one float each; dq's rows start 16-byte aligned (flash_api.cu
// checks the pointer and the strides). Every lane takes part in the trade, so no lane may
// return before it.
template <int kColumns>
__device__ __forceinline__ void add_dq_chunk(float* dq, std::int64_t row_stride, int rows, float scale,
                                             const float (&acc)[kColumns / 8][4], int lane) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#pragma unroll
  for (int nb = 0; nb < kColumns / 8; ++nb) {
    float sent[2];
    row_quad_outgoing(acc[nb], lane, sent);
    const float received[2] = {__shfl_xor_sync(0xffffffffu, sent[0], kRowQuadPartnerMask),
                               __shfl_xor_sync(0xffffffffu, sent[1], kRowQuadPartnerMask)};
    const AccumulatorRowQuad q = row_quad(acc[nb], received, lane);
    if (q.row < rows)
      atomicAdd(reinterpret_cast<float4*>(dq + q.row * row_stride + nb * 8 + q.col),
                make_float4(scale * q.v[0], scale * q.v[1], scale * q.v[2], scale * q.v[3]));
  }
#else
  const int group = lane / 4, quad = lane % 4;
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int row = group + half * 8;
    if (row >= rows) continue;
#pragma unroll
    for (int nb = 0; nb < kColumns / 8; ++nb) {
      float* dst = dq + row * row_stride + nb * 8 + quad * 2;
      atomicAdd(dst, scale * acc[nb][2 * half]);
      atomicAdd(dst + 1, scale * acc[nb][2 * half + 1]);
    }
  }
#endif
}

// kAtomicDq false (the deterministic mode): dK and dV only; a compile-time switch, because a
// run-time branch around the dQ block makes the d = 128 kernel spill. kGradients: which of dK
// (with dQ) and dV this launch accumulates. One block per SM at least (the bounds' second
// argument) lets ptxas take every register: without it the 192 / 128 dV pass stops at 168 and
// spills (perf/RESULTS.md, "2026-11-30 — head dim 256 and MLA's 192 / 128 in the sm80 kernels:
// registers and spills (compile only)").
template <typename T, int kHeadDim, int kValueDim, int kKeyTile, bool kAtomicDq, KeyGradients kGradients>
__global__ void __launch_bounds__(BackwardConfig<kHeadDim, kValueDim, kKeyTile>::kThreads, 1)
    flash_backward_kernel(const BackwardArgs args) {
  using Config = BackwardConfig<kHeadDim, kValueDim, kKeyTile>;
  constexpr int kBlockM = Config::kBlockM, kBlockN = Config::kBlockN, kThreads = Config::kThreads;
  constexpr int D = kHeadDim, DV = kValueDim;
  constexpr bool kValue = kGradients != KeyGradients::kKeyOnly;  // dV += P^T dO
  constexpr bool kKey = kGradients != KeyGradients::kValueOnly;  // dP^T, dS^T, dK += dS^T Q and dQ

  extern __shared__ __align__(128) unsigned char shared_bytes[];
  T* k_s = reinterpret_cast<T*>(shared_bytes);                            // [kBlockN][D]
  T* v_s = k_s + kBlockN * D;                                             // [kBlockN][DV]
  T* q_tiles = v_s + kBlockN * DV;                                        // [2][kBlockM][D]
  T* do_tiles = q_tiles + 2 * kBlockM * D;                                // [2][kBlockM][DV]
  T* ds_s = do_tiles + 2 * kBlockM * DV;                                  // dS^T, [kBlockN][kBlockM]
  float* lse_tiles = reinterpret_cast<float*>(ds_s + kBlockN * kBlockM);  // [2][kBlockM]
  float* delta_tiles = lse_tiles + 2 * kBlockM;                           // [2][kBlockM]

  const AttentionDims& dims = args.dims;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int group = lane / 4, quad = lane % 4;

  const int kv_heads_total = dims.batch * dims.kv_heads;
  const int bhk = static_cast<int>(blockIdx.x % kv_heads_total);
  const int k_tile = static_cast<int>(blockIdx.x / kv_heads_total);
  const int b = bhk / dims.kv_heads, kv_head = bhk % dims.kv_heads;
  const DeviceMask mask = dims.mask.for_entry(b);  // batch entry b's (per-sequence documents)
  const int group_size = dims.heads / dims.kv_heads;
  const int k_first = k_tile * kBlockN;

  const T* k = static_cast<const T*>(args.k.data) + b * args.k.batch + kv_head * args.k.head;
  const T* v = static_cast<const T*>(args.v.data) + b * args.v.batch + kv_head * args.v.head;
  load_tile_async<kBlockN, D, kThreads>(k_s, k + k_first * args.k.seq, args.k.seq, dims.seq_k - k_first);
  if constexpr (kKey)
    load_tile_async<kBlockN, DV, kThreads>(v_s, v + k_first * args.v.seq, args.v.seq, dims.seq_k - k_first);

  // Where each head's walk begins and ends and which of its tiles are full, found once
  // (query_tile_walk): only the tiles near the causal diagonal or the window's edge are classified.
  // The walk's (query head, query tile) pairs: `walk_tiles` tiles a head from bounds.begin_tile.
  const QueryWalkBounds bounds =
      query_tile_walk(mask, dims.q_positions, dims.k_positions, k_first, kBlockN, dims.seq_k, kBlockM, dims.seq_q);
  const int walk_tiles = bounds.end_tile - bounds.begin_tile;
  const int iterations = group_size * walk_tiles;
  auto head_of = [&](int it) { return kv_head * group_size + it / walk_tiles; };
  auto q_tile_of = [&](int it) { return bounds.begin_tile + it % walk_tiles; };
  auto kind_of = [&](int q_tile) {
    if (q_tile >= bounds.full_begin && q_tile < bounds.full_end) return TileKind::kFull;
    return classify_tile(mask, dims.q_positions, dims.k_positions, q_tile * kBlockM, kBlockM, dims.seq_q, k_first,
                         kBlockN, dims.seq_k);
  };
  // The first (query head, query tile) pair from `it` on that the mask does not hide, its kind
  // in `kind`: each pair classified once per walk.
  auto next_visible = [&](int it, TileKind& kind) {
    for (; it < iterations; ++it) {
      kind = kind_of(q_tile_of(it));
      if (kind != TileKind::kSkip) break;
    }
    return it;
  };
  auto load_query_tile = [&](int it, int stage) {
    const int head = head_of(it);
    const int q_first = q_tile_of(it) * kBlockM;
    const T* q = static_cast<const T*>(args.q.data) + b * args.q.batch + head * args.q.head + q_first * args.q.seq;
    const T* dout =
        static_cast<const T*>(args.dout.data) + b * args.dout.batch + head * args.dout.head + q_first * args.dout.seq;
    load_tile_async<kBlockM, D, kThreads>(q_tiles + stage * kBlockM * D, q, args.q.seq, dims.seq_q - q_first);
    load_tile_async<kBlockM, DV, kThreads>(do_tiles + stage * kBlockM * DV, dout, args.dout.seq, dims.seq_q - q_first);
    if (threadIdx.x < kBlockM) {
      const int row = q_first + static_cast<int>(threadIdx.x);
      const bool valid = row < dims.seq_q;
      const std::int64_t at = (static_cast<std::int64_t>(b) * dims.heads + head) * dims.seq_q + (valid ? row : 0);
      cp_async_4(shared_address(lse_tiles + stage * kBlockM + threadIdx.x), args.lse + at, valid);
      if constexpr (kKey)
        cp_async_4(shared_address(delta_tiles + stage * kBlockM + threadIdx.x), args.delta + at, valid);
    }
  };

  TileKind kind = TileKind::kSkip;
  int it = next_visible(0, kind);
  if (it < iterations) load_query_tile(it, 0);
  cp_async_commit();

  // The accumulators this launch keeps (one element for the other: never used).
  float dk[kKey ? D / 8 : 1][4], dv[kValue ? DV / 8 : 1][4];
#pragma unroll
  for (int i = 0; i < (kKey ? D / 8 : 1); ++i) dk[i][0] = dk[i][1] = dk[i][2] = dk[i][3] = 0.f;
#pragma unroll
  for (int i = 0; i < (kValue ? DV / 8 : 1); ++i) dv[i][0] = dv[i][1] = dv[i][2] = dv[i][3] = 0.f;

  cp_async_wait_all();
  __syncthreads();

  int stage = 0;
  while (it < iterations) {
    TileKind next_kind = TileKind::kSkip;
    const int next = next_visible(it + 1, next_kind);
    if (next < iterations) load_query_tile(next, stage ^ 1);
    cp_async_commit();

    const int head = head_of(it);
    const int q_first = q_tile_of(it) * kBlockM;
    const T* q_s = q_tiles + stage * kBlockM * D;
    const T* do_s = do_tiles + stage * kBlockM * DV;
    const float* lse_s = lse_tiles + stage * kBlockM;
    const float* delta_s = delta_tiles + stage * kBlockM;

    // S^T = K Q^T (over D) and, with dK, dP^T = V dO^T (over DV): 16 keys x kBlockM queries per
    // warp, the warp's key rows as the A operand.
    float st[kBlockM / 8][4], dpt[kBlockM / 8][4];
    rows_times_tile_transposed<T, D, kBlockM>(st, RowFragments<T, D, false>(k_s, warp * 16, lane), q_s, lane);
    if constexpr (kKey) {
      rows_times_tile_transposed<T, DV, kBlockM>(dpt, RowFragments<T, DV, false>(v_s, warp * 16, lane), do_s, lane);
    }

    // S^T capped where scores are soft-capped; with dK, dP^T - D in dpt, times the cap's slope.
    if constexpr (kKey) {
      cap_scores_less_row_term(dims.cap, st, dpt, [&](int nb, int e) { return delta_s[nb * 8 + quad * 2 + e % 2]; });
    } else {
      cap_scores(dims.cap, st);
    }
    // The mask after the cap, whose tanh would make its -inf finite.
    if (kind == TileKind::kPartial) {
      mask_fragment<FragmentRows::kKeys>(st, mask, dims.q_positions, dims.k_positions, dims.seq_q, dims.seq_k,
                                         k_first + warp * 16, q_first, lane);
    }

    // P^T = exp(scale S^T - lse), 0 where masked, and dS^T = P^T (dP^T - D), kept in dpt. lse =
    // -inf marks a row that sees no key anywhere: all its P are 0.
#pragma unroll
    for (int nb = 0; nb < kBlockM / 8; ++nb) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float lse = lse_s[nb * 8 + quad * 2 + (e % 2)];
        const bool shown = st[nb][e] != -INFINITY && lse != -INFINITY;
        const float p = shown ? probability_from_log2(fmaf(st[nb][e], dims.scale_log2, -lse * kLog2e)) : 0.f;
        st[nb][e] = p;
        if constexpr (kKey) dpt[nb][e] *= p;
      }
    }

    // dV += P^T dO and dK += dS^T Q (the scale is applied once, at the end).
    if constexpr (kValue) accumulate_weights_times_tile<T, DV, kBlockM>(dv, st, do_s, lane);
    if constexpr (kKey) accumulate_weights_times_tile<T, D, kBlockM>(dk, dpt, q_s, lane);

    // dS^T to shared memory for dQ, rounded to the input type like the other mma operands.
    if constexpr (kAtomicDq && kKey) {
#pragma unroll
      for (int nb = 0; nb < kBlockM / 8; ++nb) {
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const int key = warp * 16 + group + half * 8, query = nb * 8 + quad * 2;
          *reinterpret_cast<std::uint32_t*>(ds_s + swizzled<kBlockM>(key, query)) =
              pack2<T>(dpt[nb][2 * half], dpt[nb][2 * half + 1]);
        }
      }
      __syncthreads();

      // dQ += scale * dS K for 16 queries x kDimChunk columns at a time, added with atomics
      // (other CTAs add other key tiles' contributions to the same rows).
      {
        const int query_group = warp % Config::kQueryGroups;
        const int dim_first = (warp / Config::kQueryGroups) * Config::kDimPerWarp;
#pragma unroll
        for (int chunk = 0; chunk < Config::kDimPerWarp / Config::kDimChunk; ++chunk) {
          float dq[Config::kDimChunk / 8][4];
#pragma unroll
          for (int i = 0; i < Config::kDimChunk / 8; ++i) dq[i][0] = dq[i][1] = dq[i][2] = dq[i][3] = 0.f;
#pragma unroll
          for (int kk = 0; kk < kBlockN / 16; ++kk) {
            std::uint32_t af[4];
            // dS^T is stored [key][query]: the transposing load yields dS's A fragment.
            const int key = kk * 16 + (lane / 16) * 8 + lane % 8;
            const int query = query_group * 16 + ((lane / 8) % 2) * 8;
            ldmatrix_x4_trans(af, shared_address(ds_s + swizzled<kBlockM>(key, query)));
#pragma unroll
            for (int db = 0; db < Config::kDimChunk / 16; ++db) {
              std::uint32_t kf[4];
              const int krow = kk * 16 + ((lane / 8) % 2) * 8 + lane % 8;
              const int kcol = dim_first + chunk * Config::kDimChunk + db * 16 + (lane / 16) * 8;
              ldmatrix_x4_trans(kf, shared_address(k_s + swizzled<D>(krow, kcol)));
              mma_16816<T>(dq[2 * db], af, kf[0], kf[1]);
              mma_16816<T>(dq[2 * db + 1], af, kf[2], kf[3]);
            }
          }
          float* const chunk_dq = static_cast<float*>(args.dq_accum.data) + b * args.dq_accum.batch +
                                  (q_first + query_group * 16) * args.dq_accum.seq + head * args.dq_accum.head +
                                  dim_first + chunk * Config::kDimChunk;
          add_dq_chunk<Config::kDimChunk>(chunk_dq, args.dq_accum.seq, dims.seq_q - (q_first + query_group * 16),
                                          dims.scale, dq, lane);
        }
      }
    }

    it = next;
    kind = next_kind;
    stage ^= 1;
    // Everyone is done with this stage and with dS^T before they are overwritten.
    cp_async_wait_all();
    __syncthreads();
  }

  // Epilogue: dK (scaled) and dV of the CTA's keys, complete over the whole GQA group.
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int key = k_first + warp * 16 + group + half * 8;
    if (key >= dims.seq_k) continue;
    const std::int64_t dk_at = b * args.dk.batch + key * args.dk.seq + kv_head * args.dk.head;
    const std::int64_t dv_at = b * args.dv.batch + key * args.dv.seq + kv_head * args.dv.head;
    // Each key row belongs to exactly one CTA of a launch: no atomics in the accumulate mode.
    if constexpr (kKey) {
#pragma unroll
      for (int db = 0; db < D / 8; ++db)
        store_or_add_pair<T>(args.dk.data, dk_at + db * 8 + quad * 2, dims.scale * dk[db][2 * half],
                             dims.scale * dk[db][2 * half + 1], args.store_dkdv, args.overwrite_dkdv);
    }
    if constexpr (kValue) {
#pragma unroll
      for (int db = 0; db < DV / 8; ++db)
        store_or_add_pair<T>(args.dv.data, dv_at + db * 8 + quad * 2, dv[db][2 * half], dv[db][2 * half + 1],
                             args.store_dkdv, args.overwrite_dkdv);
    }
  }
}

}  // namespace

// Calls f(T{}, BackwardConfig<D, DV, keys>{}) for the element type, the head dims and the key
// tile the arguments ask for (flash_api.cu has checked them; a tile the head dims do not take,
// or any value but 128, is 64).
template <typename F>
cudaError_t dispatch_backward_config(ElementType dtype, int head_dim, int value_dim, int key_tile, F&& f) {
  return dispatch_dtype_dims(Sm80DimPairs{}, dtype, head_dim, value_dim, [&](auto element, auto dim, auto value) {
    constexpr int D = decltype(dim)::value, DV = decltype(value)::value;
    if constexpr (D + DV <= kWideBackwardColumnsMax) {
      if (key_tile == 128) return f(element, BackwardConfig<D, DV, 128>{});
    }
    return f(element, BackwardConfig<D, DV, 64>{});
  });
}

int flash_backward_shared_bytes(int head_dim, int value_dim, int key_tile) {
  int bytes = 0;
  dispatch_backward_config(ElementType::kBf16, head_dim, value_dim, key_tile, [&](auto, auto config) {
    bytes = decltype(config)::kSmemBytes;
    return cudaSuccess;
  });
  return bytes;
}

cudaError_t launch_flash_backward(const BackwardArgs& args, ElementType dtype, cudaStream_t stream) {
  return dispatch_backward_config(
      dtype, args.dims.head_dim, args.dims.value_dim, args.key_tile, [&](auto element, auto config) {
        using T = decltype(element);
        using Config = decltype(config);
        constexpr int D = Config::kHeadDim, DV = Config::kValueDim, kKeys = Config::kBlockN;
        const std::int64_t tiles = (args.dims.seq_k + Config::kBlockN - 1) / Config::kBlockN;
        const std::int64_t blocks = tiles * args.dims.batch * args.dims.kv_heads;
        const auto launch = [&](auto kernel) {
          return launch_tiles(kernel, args, blocks, Config::kThreads, Config::kSmemBytes, stream);
        };
        if constexpr (Config::kTwoPasses) {
          const cudaError_t value_pass =
              launch(flash_backward_kernel<T, D, DV, kKeys, false, KeyGradients::kValueOnly>);
          if (value_pass != cudaSuccess) return value_pass;
          return args.atomic_dq ? launch(flash_backward_kernel<T, D, DV, kKeys, true, KeyGradients::kKeyOnly>)
                                : launch(flash_backward_kernel<T, D, DV, kKeys, false, KeyGradients::kKeyOnly>);
        } else {
          return args.atomic_dq ? launch(flash_backward_kernel<T, D, DV, kKeys, true, KeyGradients::kBoth>)
                                : launch(flash_backward_kernel<T, D, DV, kKeys, false, KeyGradients::kBoth>);
        }
      });
}

}  // namespace detail
}  // namespace rfa_cuda
