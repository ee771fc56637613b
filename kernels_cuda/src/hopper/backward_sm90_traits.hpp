// SPDX-License-Identifier: BSD-3-Clause
// Shapes of the Hopper backward (backward_sm90.cu): tiles, shared-memory layouts, the four
// warpgroup MMAs and the query-tile pipeline. Host and device code (the fragment test checks
// these types on the host).
//
// One CTA owns kBlockN = 128 keys of one (batch, kv head) and walks every query tile of every
// query head of its GQA group, so that dK and dV stay in registers until the end. Three
// warpgroups: the producer (one thread issues the TMA loads: K and V once, then Q and dO of each
// visible query tile into a two-stage ring) and two consumers of 64 keys each. Per query tile a
// consumer computes S^T = K Q^T and dP^T = V dO^T (both operands in shared memory), turns them
// into P^T and dS^T in registers, adds P^T dO to dV and dS^T Q to dK (P^T and dS^T as register
// A operands, dO and Q read transposed in place), and writes dS^T to shared memory, each step
// beside a product in flight (P^T's exponentials while dP^T is computed, dS^T while P^T dO is
// added); then the two consumers compute dQ = dS K for the tile, each a share of it (below), and
// add it to the fp32 dQ in global memory from shared memory with one TMA reduce-add each (a
// tensor copy of the whole share: one request to the copy engine per tile, where a bulk add per
// row would queue 64 of them ahead of the next tile's loads).
#pragma once

#include <cstdint>

#include <cutlass/numeric_types.h>
#include <cute/tensor.hpp>
#include <cutlass/pipeline/pipeline.hpp>

namespace rfa_cuda {
namespace hopper {

template <typename Element, int kDim>
struct BackwardSm90Traits {
  using T = Element;  // cutlass::bfloat16_t or cutlass::half_t
  static constexpr int kHeadDim = kDim;
  static constexpr int kBlockN = 128;  // keys per CTA
  static constexpr int kBlockM = 64;   // queries per tile
  static constexpr int kStages = 2;    // of the Q / dO ring
  static constexpr int kConsumerWarpgroups = 2;
  static constexpr int kConsumerThreads = 128 * kConsumerWarpgroups;
  static constexpr int kThreads = 128 + kConsumerThreads;
  // Register budgets after setmaxnreg (65536 per SM, one CTA per SM): the consumers hold dK
  // and dV (64 fp32 each per thread at d = 128) besides the scores.
  static constexpr int kProducerRegisters = 24;
  static constexpr int kConsumerRegisters = 240;
  static_assert(kHeadDim % 64 == 0, "rows of whole 128-byte swizzle atoms");

  using Keys = cute::Int<kBlockN>;
  using Queries = cute::Int<kBlockM>;
  using Dim = cute::Int<kHeadDim>;
  using Stages = cute::Int<kStages>;
  using KeysByQueries = cute::Shape<Keys, Queries>;
  using KeysByDim = cute::Shape<Keys, Dim>;
  using QueriesByDim = cute::Shape<Queries, Dim>;
  // The consumers split the keys (rows of S^T, dP^T, dK, dV): warpgroup w owns keys 64w .. 64w + 63.
  using SplitKeys = cute::Layout<cute::Shape<cute::_2, cute::_1, cute::_1>>;
  // dQ = dS K (M = queries, K = keys) is split between the consumers too, each issuing its own
  // product: at d = 128 by the head dimension (warpgroup w: columns 64w .. 64w + 63, whole
  // 128-byte rows of K^T), at d = 64 by the keys (warpgroup w: its own 64 keys, all 64 columns,
  // both partial products added), since half a row of K^T would be 32 columns, less than the
  // 128-byte swizzle of K's rows.
  static constexpr bool kDqSplitsKeys = kHeadDim < 128;
  static constexpr int kDqColumns = kDqSplitsKeys ? kHeadDim : kHeadDim / 2;  // per consumer
  static constexpr int kDqKeys = kDqSplitsKeys ? kBlockN / 2 : kBlockN;       // per consumer
  using DqColumns = cute::Int<kDqColumns>;
  using DqKeys = cute::Int<kDqKeys>;
  using QueriesByDqColumns = cute::Shape<Queries, DqColumns>;

  // S^T = K Q^T and dP^T = V dO^T: M = keys, N = queries, K = head dim; K-major operands.
  using MmaScores = decltype(cute::make_tiled_mma(
      cute::GMMA::ss_op_selector<T, T, float, cute::Shape<Keys, Queries, Dim>>(), SplitKeys{}));
  // dV += P^T dO and dK += dS^T Q: M = keys, N = head dim, K = queries; A from registers, B the
  // query tile read transposed (head dim contiguous: MN-major).
  using MmaKeyGrads =
      decltype(cute::make_tiled_mma(cute::GMMA::rs_op_selector<T, T, float, cute::Shape<Keys, Dim, Queries>,
                                                               cute::GMMA::Major::K, cute::GMMA::Major::MN>(),
                                    SplitKeys{}));
  // One consumer's share of dQ = dS K, a warpgroup's product (128 threads): M = queries, N = its
  // columns, K = its keys; dS from shared memory stored query-contiguous (MN-major A), K read
  // transposed (MN-major B).
  using MmaQueryGrad =
      decltype(cute::make_tiled_mma(cute::GMMA::ss_op_selector<T, T, float, cute::Shape<Queries, DqColumns, DqKeys>,
                                                               cute::GMMA::Major::MN, cute::GMMA::Major::MN>()));

  using SwizzleAtom = cute::GMMA::Layout_K_SW128_Atom<T>;
  using SmemLayoutK = decltype(cute::tile_to_shape(SwizzleAtom{}, KeysByDim{}));
  using SmemLayoutV = SmemLayoutK;
  // K viewed as (head dim, keys): element (d, n) is K's (n, d).
  using SmemLayoutKt = decltype(cute::composition(
      SmemLayoutK{}, cute::make_ordered_layout(cute::Shape<Dim, Keys>{}, cute::Step<cute::_2, cute::_1>{})));
  using SmemLayoutQ = decltype(cute::tile_to_shape(SwizzleAtom{}, cute::Shape<Queries, Dim, Stages>{}));
  using SmemLayoutDout = SmemLayoutQ;
  // Q and dO viewed as (head dim, queries, stage).
  using SmemLayoutQt =
      decltype(cute::composition(SmemLayoutQ{}, cute::make_ordered_layout(cute::Shape<Dim, Queries, Stages>{},
                                                                          cute::Step<cute::_2, cute::_1, cute::_3>{})));
  using SmemLayoutDoutT = SmemLayoutQt;
  // dS as (queries, keys, buffer), queries contiguous: written from the dS^T accumulators,
  // read as dQ's A operand. Two buffers, so that one tile's writes never meet the other
  // consumer's dQ product of the tile before.
  using SmemLayoutDs =
      decltype(cute::tile_to_shape(cute::GMMA::Layout_MN_SW128_Atom<T>{}, cute::Shape<Queries, Keys, cute::_2>{}));
  static constexpr int kDsBufferBytes = kBlockM * kBlockN * static_cast<int>(sizeof(T));
  // Where a consumer thread writes its dS^T accumulators into SmemLayoutDs, as the kernel
  // computes it: a tile's 64 queries in 16-bit values are one 128-byte row of a swizzle atom, and
  // an atom holds 8 keys (1024 bytes), the atoms one after another along the keys. Consumer
  // thread t (0 .. 255, warpgroup t / 128 owning keys 64 (t / 128) ..) holds the pairs of
  // adjacent queries c0 + 8j, c0 + 8j + 1 of keys r0 and r0 + 8 (the accumulator layout of a
  // 64-row wgmma: r0 = 64 (t / 128) + 16 (t % 128 / 32) + t % 32 / 4, c0 = 2 (t % 4)): its keys
  // share one row of their atoms, r0 % 8, and so one permutation of 16-byte pieces, and each pair
  // is 4 adjacent bytes, one 32-bit store. The pair (key r0 + 8 e1, queries c0 + 8j, + 1) of a
  // buffer lies at the bytes (ds_thread_offset(t) + ds_pair_offset(e1, j)) ^ ds_swizzle(t) from
  // the buffer's start (a 1024-byte boundary). The fragment test checks these against CuTe.
  static_assert(kBlockM * sizeof(T) == 128, "a tile's queries are one 128-byte row of a swizzle atom");
  CUTE_HOST_DEVICE static int ds_thread_offset(int t) { return 2048 * (t / 32) + 128 * (t % 32 / 4) + 4 * (t % 4); }
  CUTE_HOST_DEVICE static constexpr int ds_pair_offset(int e1, int j) { return 1024 * e1 + 16 * j; }
  CUTE_HOST_DEVICE static std::uint32_t ds_swizzle(int t) { return static_cast<std::uint32_t>(t % 32 / 4) << 4; }

  // One consumer's share of a dQ tile: fp32 rows of kDqColumns in 128-byte swizzle atoms (8 rows
  // of 32 values, each row's 16-byte pieces permuted by the row), the source of the TMA
  // reduce-add into dQ, which reads the swizzle (rows past the sequence are clipped by the copy
  // engine). A warp writes its accumulators as 8 rows of 8 columns: in dense rows of 64 values
  // those fall in the same 8 banks (8 ways of conflict), in the swizzle across all 32.
  using SmemLayoutDq = decltype(cute::tile_to_shape(cute::GMMA::Layout_K_SW128_Atom<float>{}, QueriesByDqColumns{}));
  // Where a consumer thread writes its dQ accumulators into SmemLayoutDq, as the kernel computes
  // it: thread t holds pairs of adjacent columns c0 + 8j, c0 + 8j + 1 in rows r0 and r0 + 8 (the
  // accumulator layout of a 64-row wgmma: r0 = 16 (t / 32) + t % 32 / 4, c0 = 2 (t % 4)), so all
  // its rows share one row of a swizzle atom, r0 % 8, and one permutation of 16-byte pieces. The
  // pair (row r0 + 8 e1, column c0 + 8 j) lies at the bytes 4 (dq_thread_offset(t) +
  // dq_pair_offset(e1, j)) ^ dq_swizzle(t) of the share (which starts on a 1024-byte boundary):
  // the thread's part computed once, each pair's a constant. The fragment test checks both
  // against CuTe's layouts.
  CUTE_HOST_DEVICE static int dq_thread_offset(int t) {
    const int r0 = 16 * (t / 32) + t % 32 / 4, c0 = 2 * (t % 4);
    return r0 / 8 * 256 + r0 % 8 * 32 + c0;  // atoms of 8 rows of 32 values, down the rows first
  }
  CUTE_HOST_DEVICE static constexpr int dq_pair_offset(int e1, int j) {
    return e1 * 256 + j / 4 * (kBlockM / 8) * 256 + 8 * (j % 4);
  }
  CUTE_HOST_DEVICE static std::uint32_t dq_swizzle(int t) { return static_cast<std::uint32_t>(t % 32 / 4) << 4; }

  using Pipeline = cutlass::PipelineTmaAsync<kStages>;

  struct SharedStorage {
    cute::array_aligned<T, cute::cosize_v<SmemLayoutK>, 1024> k;
    cute::array_aligned<T, cute::cosize_v<SmemLayoutV>, 1024> v;
    cute::array_aligned<T, cute::cosize_v<SmemLayoutQ>, 1024> q;
    cute::array_aligned<T, cute::cosize_v<SmemLayoutDout>, 1024> dout;
    cute::array_aligned<T, cute::cosize_v<SmemLayoutDs>, 1024> ds;
    // Each consumer's share of one dQ tile (SmemLayoutDq): the source of its TMA reduce-add.
    cute::array_aligned<float, kConsumerWarpgroups * cute::cosize_v<SmemLayoutDq>, 1024> dq;
    // Per buffer (alternating by query tile, as dS): each query's lse in the exp2 domain and D.
    float row_statistics[2][2][kBlockM];
    typename Pipeline::SharedStorage pipeline_q;
    alignas(8) std::uint64_t kv_barrier;
  };
  static constexpr int kSmemBytes = static_cast<int>(sizeof(SharedStorage));
  static constexpr std::uint32_t kKVBytes = 2 * kBlockN * kHeadDim * sizeof(T);
  static constexpr std::uint32_t kQueryTileBytes = 2 * kBlockM * kHeadDim * sizeof(T);  // Q and dO
};

}  // namespace hopper
}  // namespace rfa_cuda
