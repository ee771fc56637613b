// SPDX-License-Identifier: BSD-3-Clause
// FlashAttention-2 backward: one CTA owns a tile of kBlockN key rows of one (batch, kv head)
// and keeps their dK, dV in registers while it streams every query tile of every query head
// of its GQA group (Q, dO, lse, D through shared memory, cp.async, two stages). dK and dV are
// therefore complete when the CTA ends and are written (or added) once, without atomics;
// dQ receives each tile's contribution with fp32 atomics.
//
// Warp w owns keys 16w..16w+15 and computes S^T = K Q^T and dP^T = V dO^T directly in that
// orientation, so P^T and dS^T are already A fragments for dV += P^T dO and dK += dS^T Q.
// dS^T goes through shared memory once for dQ += dS K, where warps split queries instead.
// In the deterministic mode (kAtomicDq false) this kernel computes dK and dV only and
// flash_backward_dq.cu computes dQ.
//
// At d = 256, dK and dV would take 256 accumulator registers per thread: the kernel then runs
// twice, once for dV (S^T and P^T only) and once for dK and dQ, each pass holding one
// accumulator; S^T = K Q^T is computed in both, one product in six more than one pass would do.
#include <cmath>
#include <cstdint>

#include "attention_mask.cuh"
#include "device_primitives.cuh"
#include "kernel_args.hpp"
#include "launch_dispatch.cuh"

namespace rfa_cuda {
namespace detail {
namespace {

// What one launch accumulates: both key-side gradients, or one of them (d = 256, where one
// accumulator takes all the registers a pass can spare).
enum class KeyGradients { kBoth, kValueOnly, kKeyOnly };

template <int kHeadDim>
struct BackwardConfig {
  // d = 128 keeps 128 accumulator registers per thread for dK and dV: 4 warps. d = 64 has
  // room for 8 warps and so twice the keys per CTA (half the Q/dO traffic). d = 256 keeps 128
  // for one of them per pass (the passes above).
  static constexpr bool kTwoPasses = kHeadDim == 256;
  static constexpr int kWarps = kHeadDim == 64 ? 8 : 4;
  static constexpr int kThreads = 32 * kWarps;
  static constexpr int kBlockN = 16 * kWarps;  // key rows per CTA
  // Query rows per pipeline stage: S^T and dP^T take kBlockM/2 registers each on top of dK,
  // dV; 32 keeps d = 128 free of spills.
  static constexpr int kBlockM = kHeadDim == 64 ? 64 : 32;
  // dQ: warps split the kBlockM queries in groups of 16, then the head dimension.
  static constexpr int kQueryGroups = kBlockM / 16;
  static constexpr int kDimSplit = kWarps / kQueryGroups;
  static constexpr int kDimPerWarp = kHeadDim / kDimSplit;
  static constexpr int kDimChunk = kDimPerWarp < 64 ? kDimPerWarp : 64;   // bounds registers
  static constexpr int kSmemElements = 2 * kBlockN * kHeadDim             // K, V
                                       + 4 * kBlockM * kHeadDim           // Q, dO, two stages each
                                       + kBlockN * kBlockM;               // dS^T
  static constexpr int kSmemBytes = kSmemElements * 2 + 4 * kBlockM * 4;  // + lse, D (2 stages)
};

constexpr float kLog2e = 1.44269504088896340736f;

// kAtomicDq false (the deterministic mode): dK and dV only; a compile-time switch, because a
// run-time branch around the dQ block makes the d = 128 kernel spill. kGradients: which of dK
// (with dQ) and dV this launch accumulates.
template <typename T, int kHeadDim, bool kAtomicDq, KeyGradients kGradients>
__global__ void __launch_bounds__(BackwardConfig<kHeadDim>::kThreads) flash_backward_kernel(const BackwardArgs args) {
  using Config = BackwardConfig<kHeadDim>;
  constexpr int kBlockM = Config::kBlockM, kBlockN = Config::kBlockN, kThreads = Config::kThreads;
  constexpr int D = kHeadDim;
  constexpr bool kValue = kGradients != KeyGradients::kKeyOnly;  // dV += P^T dO
  constexpr bool kKey = kGradients != KeyGradients::kValueOnly;  // dP^T, dS^T, dK += dS^T Q and dQ

  extern __shared__ __align__(128) unsigned char shared_bytes[];
  T* k_s = reinterpret_cast<T*>(shared_bytes);
  T* v_s = k_s + kBlockN * D;
  T* q_tiles = v_s + kBlockN * D;                                         // [2][kBlockM][D]
  T* do_tiles = q_tiles + 2 * kBlockM * D;                                // [2][kBlockM][D]
  T* ds_s = do_tiles + 2 * kBlockM * D;                                   // dS^T, [kBlockN][kBlockM]
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
  const int num_q_tiles = (dims.seq_q + kBlockM - 1) / kBlockM;
  const int iterations = group_size * num_q_tiles;  // (query head, query tile) pairs

  const T* k = static_cast<const T*>(args.k.data) + b * args.k.batch + kv_head * args.k.head;
  const T* v = static_cast<const T*>(args.v.data) + b * args.v.batch + kv_head * args.v.head;
  load_tile_async<kBlockN, D, kThreads>(k_s, k + k_first * args.k.seq, args.k.seq, dims.seq_k - k_first);
  if constexpr (kKey)
    load_tile_async<kBlockN, D, kThreads>(v_s, v + k_first * args.v.seq, args.v.seq, dims.seq_k - k_first);

  auto kind_of = [&](int q_tile) {
    return classify_tile(mask, dims.q_positions, dims.k_positions, q_tile * kBlockM, kBlockM, dims.seq_q, k_first,
                         kBlockN, dims.seq_k);
  };
  auto next_visible = [&](int it) {
    while (it < iterations && kind_of(it % num_q_tiles) == TileKind::kSkip) ++it;
    return it;
  };
  auto load_query_tile = [&](int it, int stage) {
    const int head = kv_head * group_size + it / num_q_tiles;
    const int q_first = (it % num_q_tiles) * kBlockM;
    const T* q = static_cast<const T*>(args.q.data) + b * args.q.batch + head * args.q.head + q_first * args.q.seq;
    const T* dout =
        static_cast<const T*>(args.dout.data) + b * args.dout.batch + head * args.dout.head + q_first * args.dout.seq;
    load_tile_async<kBlockM, D, kThreads>(q_tiles + stage * kBlockM * D, q, args.q.seq, dims.seq_q - q_first);
    load_tile_async<kBlockM, D, kThreads>(do_tiles + stage * kBlockM * D, dout, args.dout.seq, dims.seq_q - q_first);
    if (threadIdx.x < kBlockM) {
      const int row = q_first + static_cast<int>(threadIdx.x);
      const bool valid = row < dims.seq_q;
      const std::int64_t at = (static_cast<std::int64_t>(b) * dims.heads + head) * dims.seq_q + (valid ? row : 0);
      cp_async_4(shared_address(lse_tiles + stage * kBlockM + threadIdx.x), args.lse + at, valid);
      if constexpr (kKey)
        cp_async_4(shared_address(delta_tiles + stage * kBlockM + threadIdx.x), args.delta + at, valid);
    }
  };

  int it = next_visible(0);
  if (it < iterations) load_query_tile(it, 0);
  cp_async_commit();

  // The accumulators this launch keeps (one element for the other: never used).
  float dk[kKey ? D / 8 : 1][4], dv[kValue ? D / 8 : 1][4];
#pragma unroll
  for (int i = 0; i < (kKey ? D / 8 : 1); ++i) dk[i][0] = dk[i][1] = dk[i][2] = dk[i][3] = 0.f;
#pragma unroll
  for (int i = 0; i < (kValue ? D / 8 : 1); ++i) dv[i][0] = dv[i][1] = dv[i][2] = dv[i][3] = 0.f;

  cp_async_wait_all();
  __syncthreads();

  int stage = 0;
  while (it < iterations) {
    const int next = next_visible(it + 1);
    if (next < iterations) load_query_tile(next, stage ^ 1);
    cp_async_commit();

    const int head = kv_head * group_size + it / num_q_tiles;
    const int q_first = (it % num_q_tiles) * kBlockM;
    const bool full_tile = kind_of(it % num_q_tiles) == TileKind::kFull;
    const T* q_s = q_tiles + stage * kBlockM * D;
    const T* do_s = do_tiles + stage * kBlockM * D;
    const float* lse_s = lse_tiles + stage * kBlockM;
    const float* delta_s = delta_tiles + stage * kBlockM;

    // S^T = K Q^T and (with dK) dP^T = V dO^T: 16 keys x kBlockM queries per warp.
    float st[kBlockM / 8][4], dpt[kBlockM / 8][4];
#pragma unroll
    for (int i = 0; i < kBlockM / 8; ++i) {
      st[i][0] = st[i][1] = st[i][2] = st[i][3] = 0.f;
      dpt[i][0] = dpt[i][1] = dpt[i][2] = dpt[i][3] = 0.f;
    }
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      std::uint32_t kf[4], vf[4];
      const int key = warp * 16 + lane % 16, kcol = kk * 16 + (lane / 16) * 8;
      ldmatrix_x4(kf, shared_address(k_s + swizzled<D>(key, kcol)));
      if constexpr (kKey) ldmatrix_x4(vf, shared_address(v_s + swizzled<D>(key, kcol)));
#pragma unroll
      for (int nb = 0; nb < kBlockM / 16; ++nb) {
        std::uint32_t qf[4], df[4];
        const int row = nb * 16 + (lane / 16) * 8 + lane % 8;
        const int col = kk * 16 + ((lane / 8) % 2) * 8;
        ldmatrix_x4(qf, shared_address(q_s + swizzled<D>(row, col)));
        mma_16816<T>(st[2 * nb], kf, qf[0], qf[1]);
        mma_16816<T>(st[2 * nb + 1], kf, qf[2], qf[3]);
        if constexpr (kKey) {
          ldmatrix_x4(df, shared_address(do_s + swizzled<D>(row, col)));
          mma_16816<T>(dpt[2 * nb], vf, df[0], df[1]);
          mma_16816<T>(dpt[2 * nb + 1], vf, df[2], df[3]);
        }
      }
    }

    // P^T = exp(scale S^T - lse) (0 where masked) and dS^T = P^T (dP^T - D), S^T capped and dS^T
    // times the cap's slope where scores are soft-capped.
#pragma unroll
    for (int nb = 0; nb < kBlockM / 8; ++nb) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int key = warp * 16 + group + (e / 2) * 8;
        const int query = nb * 8 + quad * 2 + (e % 2);
        const float lse = lse_s[query];
        const bool shown = full_tile || visible(mask, dims.q_positions, dims.k_positions, q_first + query, dims.seq_q,
                                                k_first + key, dims.seq_k);
        // lse = -inf marks a row that sees no key anywhere: all its P are 0.
        float slope;
        const float score = dims.cap.apply(st[nb][e], slope);
        const float p = (shown && lse != -INFINITY) ? exp2f(fmaf(score, dims.scale_log2, -lse * kLog2e)) : 0.f;
        st[nb][e] = p;
        if constexpr (kKey) dpt[nb][e] = p * (dpt[nb][e] - delta_s[query]) * slope;
      }
    }

    // dV += P^T dO and dK += dS^T Q (the scale is applied once, at the end).
#pragma unroll
    for (int kk = 0; kk < kBlockM / 16; ++kk) {
      std::uint32_t p_frag[4], ds_frag[4];
      if constexpr (kValue) accumulators_to_a_fragment<T>(st[2 * kk], st[2 * kk + 1], p_frag);
      if constexpr (kKey) accumulators_to_a_fragment<T>(dpt[2 * kk], dpt[2 * kk + 1], ds_frag);
#pragma unroll
      for (int db = 0; db < D / 16; ++db) {
        std::uint32_t of[4], qf[4];
        const int row = kk * 16 + ((lane / 8) % 2) * 8 + lane % 8;
        const int col = db * 16 + (lane / 16) * 8;
        if constexpr (kValue) {
          ldmatrix_x4_trans(of, shared_address(do_s + swizzled<D>(row, col)));
          mma_16816<T>(dv[2 * db], p_frag, of[0], of[1]);
          mma_16816<T>(dv[2 * db + 1], p_frag, of[2], of[3]);
        }
        if constexpr (kKey) {
          ldmatrix_x4_trans(qf, shared_address(q_s + swizzled<D>(row, col)));
          mma_16816<T>(dk[2 * db], ds_frag, qf[0], qf[1]);
          mma_16816<T>(dk[2 * db + 1], ds_frag, qf[2], qf[3]);
        }
      }
    }

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
#pragma unroll
          for (int half = 0; half < 2; ++half) {
            const int row = q_first + query_group * 16 + group + half * 8;
            if (row >= dims.seq_q) continue;
            float* dst = static_cast<float*>(args.dq_accum.data) + b * args.dq_accum.batch + row * args.dq_accum.seq +
                         head * args.dq_accum.head + dim_first + chunk * Config::kDimChunk;
#pragma unroll
            for (int nb = 0; nb < Config::kDimChunk / 8; ++nb) {
              const int col = nb * 8 + quad * 2;
              atomicAdd(dst + col, dims.scale * dq[nb][2 * half]);
              atomicAdd(dst + col + 1, dims.scale * dq[nb][2 * half + 1]);
            }
          }
        }
      }
    }

    it = next;
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
#pragma unroll
    for (int db = 0; db < D / 8; ++db) {
      const int col = db * 8 + quad * 2;
      if constexpr (kKey)
        store_or_add_pair<T>(args.dk.data, dk_at + col, dims.scale * dk[db][2 * half],
                             dims.scale * dk[db][2 * half + 1], args.store_dkdv);
      if constexpr (kValue)
        store_or_add_pair<T>(args.dv.data, dv_at + col, dv[db][2 * half], dv[db][2 * half + 1], args.store_dkdv);
    }
  }
}

}  // namespace

cudaError_t launch_flash_backward(const BackwardArgs& args, ElementType dtype, cudaStream_t stream) {
  return dispatch_dtype_head_dim(Sm80HeadDims{}, dtype, args.dims.head_dim, [&](auto element, auto head_dim) {
    using T = decltype(element);
    constexpr int D = decltype(head_dim)::value;
    using Config = BackwardConfig<D>;
    const std::int64_t tiles = (args.dims.seq_k + Config::kBlockN - 1) / Config::kBlockN;
    const std::int64_t blocks = tiles * args.dims.batch * args.dims.kv_heads;
    const auto launch = [&](auto kernel) {
      return launch_tiles(kernel, args, blocks, Config::kThreads, Config::kSmemBytes, stream);
    };
    if constexpr (Config::kTwoPasses) {
      const cudaError_t value_pass = launch(flash_backward_kernel<T, D, false, KeyGradients::kValueOnly>);
      if (value_pass != cudaSuccess) return value_pass;
      return args.atomic_dq ? launch(flash_backward_kernel<T, D, true, KeyGradients::kKeyOnly>)
                            : launch(flash_backward_kernel<T, D, false, KeyGradients::kKeyOnly>);
    } else {
      return args.atomic_dq ? launch(flash_backward_kernel<T, D, true, KeyGradients::kBoth>)
                            : launch(flash_backward_kernel<T, D, false, KeyGradients::kBoth>);
    }
  });
}

}  // namespace detail
}  // namespace rfa_cuda
