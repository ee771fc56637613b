// SPDX-License-Identifier: BSD-3-Clause
// The Hopper (sm_90a) backward with dQ summed by TMA reduce-adds instead of atomics: TMA loads,
// wgmma, warp specialization. Shapes, layouts and the division of work in backward_sm90_traits.hpp;
// the same mask, position maps, GQA and gradient modes as the sm_80 backward
// (flash_backward.cu), whose walk over (query head, query tile) pairs it follows. The
// deterministic mode stays on the sm_80 kernels (flash_api.cu).
#include <cmath>
#include <cstdint>

#include <cutlass/arch/barrier.h>
#include <cutlass/arch/reg_reconfig.h>
#include <cute/tensor.hpp>
#include <cutlass/pipeline/pipeline.hpp>

#include "attention_mask.cuh"
#include "device_primitives.cuh"
#include "hopper/backward_sm90.hpp"
#include "hopper/backward_sm90_traits.hpp"
#include "hopper/fragment_views.hpp"
#include "hopper/warpgroup_ops.cuh"
#include "launch_dispatch.cuh"
#include "softmax_probability.cuh"

namespace rfa_cuda {
namespace hopper {
namespace {

using namespace cute;

constexpr float kLog2e = 1.44269504088896340736f;

template <class Traits>
using TmaKeys = decltype(make_tma_copy(SM90_TMA_LOAD{}, std::declval<GmemTensor<typename Traits::T>>(),
                                       typename Traits::SmemLayoutK{}));
template <class Traits>
using TmaQueries = decltype(make_tma_copy(SM90_TMA_LOAD{}, std::declval<GmemTensor<typename Traits::T>>(),
                                          take<0, 2>(typename Traits::SmemLayoutQ{})));

// dQ's fp32 accumulator as the TMA reduce-add addresses it: (seq_q, head dim, heads, batch).
template <class Traits>
using TmaQueryGrad =
    decltype(make_tma_copy(SM90_TMA_REDUCE_ADD{}, std::declval<GmemTensor<float>>(), typename Traits::SmemLayoutDq{}));

template <class Traits>
struct KernelParams {
  detail::BackwardArgs args;
  TmaKeys<Traits> tma_k, tma_v;
  TmaQueries<Traits> tma_q, tma_dout;
  TmaQueryGrad<Traits> tma_dq;
};

// The issuing thread's TMA reduce-adds of dQ (the copy engine sums them into L2) are tracked in
// its bulk group.
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
// The group's sources have been read (the shared buffer may be rewritten).
__device__ __forceinline__ void bulk_wait_read() { asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory"); }
// The group's adds are done.
__device__ __forceinline__ void bulk_wait() { asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory"); }
// `value` through an instruction the compiler neither moves nor sees through: the addresses
// built from it inside a loop are computed there, one at a time, not held across the loop.
__device__ __forceinline__ std::uint32_t opaque(std::uint32_t value) {
  asm volatile("mov.b32 %0, %0;\n" : "+r"(value));
  return value;
}
// 32 bits (two 16-bit values) at a shared-memory address (4-byte aligned).
__device__ __forceinline__ void store_shared_word(std::uint32_t address, std::uint32_t word) {
  asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(address), "r"(word) : "memory");
}
// Two fp32 values at a shared-memory address (8-byte aligned).
__device__ __forceinline__ void store_shared_pair(std::uint32_t address, float a, float b) {
  asm volatile("st.shared.v2.f32 [%0], {%1, %2};\n" ::"r"(address), "f"(a), "f"(b) : "memory");
}
// Ordinary shared-memory stores made visible to the tensor cores and the copy engine.
__device__ __forceinline__ void fence_shared_for_async() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// The CTA's key tile and its walk over the (query head of the GQA group, query tile) pairs,
// skipping the tiles the mask hides; each head's walk begins and ends where the causal mask and
// the window let its tiles be visible, and the full tiles are known without classifying them
// (query_tile_walk).
template <int kBlockM, int kBlockN>
struct QueryWalk {
  int b, kv_head, group_size, k_first;
  detail::QueryWalkBounds bounds;
  int walk_tiles, iterations;  // a head's tiles from bounds.begin_tile, and the pairs in all

  __device__ explicit QueryWalk(const detail::AttentionDims& dims) {
    const int kv_heads_total = dims.batch * dims.kv_heads;
    const int bhk = static_cast<int>(blockIdx.x % kv_heads_total);
    b = bhk / dims.kv_heads;
    kv_head = bhk % dims.kv_heads;
    k_first = static_cast<int>(blockIdx.x / kv_heads_total) * kBlockN;
    group_size = dims.heads / dims.kv_heads;
    bounds = detail::query_tile_walk(dims.mask, dims.q_positions, dims.k_positions, k_first, kBlockN, dims.seq_k,
                                     kBlockM, dims.seq_q);
    walk_tiles = bounds.end_tile - bounds.begin_tile;
    iterations = group_size * walk_tiles;
  }
  __device__ int head(int it) const { return kv_head * group_size + it / walk_tiles; }
  __device__ int q_tile(int it) const { return bounds.begin_tile + it % walk_tiles; }
  __device__ detail::TileKind kind(const detail::AttentionDims& dims, int it) const {
    if (q_tile(it) >= bounds.full_begin && q_tile(it) < bounds.full_end) return detail::TileKind::kFull;
    return detail::classify_tile(dims.mask, dims.q_positions, dims.k_positions, q_tile(it) * kBlockM, kBlockM,
                                 dims.seq_q, k_first, kBlockN, dims.seq_k);
  }
  // The first pair from `it` on that the mask does not hide (iterations if none), its kind in
  // `kind`: a walk classifies each pair once.
  __device__ int next_visible(const detail::AttentionDims& dims, int it, detail::TileKind& kind) const {
    for (; it < iterations; ++it) {
      kind = this->kind(dims, it);
      if (kind != detail::TileKind::kSkip) break;
    }
    return it;
  }
};

template <class Traits>
__global__ void __launch_bounds__(Traits::kThreads, 1)
    backward_sm90_kernel(const __grid_constant__ KernelParams<Traits> params) {
  using T = typename Traits::T;
  using Pipeline = typename Traits::Pipeline;
  using PipelineState = typename cutlass::PipelineState<Traits::kStages>;
  constexpr int kBlockM = Traits::kBlockM, kBlockN = Traits::kBlockN, D = Traits::kHeadDim;

  extern __shared__ __align__(1024) unsigned char shared_bytes[];
  auto& shared = *reinterpret_cast<typename Traits::SharedStorage*>(shared_bytes);
  // The dS^T and dQ stores swizzle addresses computed from this base, which must lie on 1024
  // bytes as declared: a base off it would store to the wrong elements without a fault.
  if (threadIdx.x == 0 && (detail::shared_address(shared_bytes) & 1023u) != 0) __trap();
  const detail::BackwardArgs& args = params.args;
  const detail::AttentionDims& dims = args.dims;
  const QueryWalk<kBlockM, kBlockN> walk(dims);
  const int warpgroup = static_cast<int>(threadIdx.x) / 128;

  const auto pipeline_params = warpgroup_pipeline_params<Pipeline>(Traits::kQueryTileBytes, Traits::kConsumerThreads);
  if (threadIdx.x == 0) cutlass::arch::ClusterTransactionBarrier::init(&shared.kv_barrier, 1);
  // Warp 0 initializes the pipeline's barriers (and fences the initializations).
  Pipeline pipeline_q(shared.pipeline_q, pipeline_params, Shape<_1, _1, _1>{});
  __syncthreads();

  Tensor sK = make_tensor(make_smem_ptr(shared.k.data()), typename Traits::SmemLayoutK{});
  Tensor sV = make_tensor(make_smem_ptr(shared.v.data()), typename Traits::SmemLayoutV{});
  Tensor sQ = make_tensor(make_smem_ptr(shared.q.data()), typename Traits::SmemLayoutQ{});
  Tensor sDout = make_tensor(make_smem_ptr(shared.dout.data()), typename Traits::SmemLayoutDout{});
  Tensor sKt = make_tensor(make_smem_ptr(shared.k.data()), typename Traits::SmemLayoutKt{});
  Tensor sQt = make_tensor(make_smem_ptr(shared.q.data()), typename Traits::SmemLayoutQt{});
  Tensor sDoutT = make_tensor(make_smem_ptr(shared.dout.data()), typename Traits::SmemLayoutDoutT{});
  Tensor sDs = make_tensor(make_smem_ptr(shared.ds.data()), typename Traits::SmemLayoutDs{});
  detail::TileKind first_kind = detail::TileKind::kSkip;
  const int first = walk.next_visible(dims, 0, first_kind);

  if (warpgroup == 0) {  // producer
    cutlass::arch::warpgroup_reg_dealloc<Traits::kProducerRegisters>();
    if (threadIdx.x != 0 || first >= walk.iterations) return;
    Tensor mK = params.tma_k.get_tma_tensor(make_shape(dims.seq_k, D, dims.kv_heads, dims.batch));
    Tensor mV = params.tma_v.get_tma_tensor(make_shape(dims.seq_k, D, dims.kv_heads, dims.batch));
    Tensor mQ = params.tma_q.get_tma_tensor(make_shape(dims.seq_q, D, dims.heads, dims.batch));
    Tensor mDout = params.tma_dout.get_tma_tensor(make_shape(dims.seq_q, D, dims.heads, dims.batch));
    const auto key_tile = make_coord(walk.k_first / kBlockN, 0);
    Tensor gK = local_tile(mK(_, _, walk.kv_head, walk.b), typename Traits::KeysByDim{}, key_tile);
    Tensor gV = local_tile(mV(_, _, walk.kv_head, walk.b), typename Traits::KeysByDim{}, key_tile);
    auto copy_k = params.tma_k.get_slice(0);
    auto copy_v = params.tma_v.get_slice(0);
    auto copy_q = params.tma_q.get_slice(0);
    auto copy_dout = params.tma_dout.get_slice(0);
    Tensor tQsQ = copy_q.partition_D(sQ);           // (TMA, TMA_M, TMA_D, stage)
    Tensor tDsDout = copy_dout.partition_D(sDout);  // (TMA, TMA_M, TMA_D, stage)

    cutlass::arch::ClusterTransactionBarrier::arrive_and_expect_tx(&shared.kv_barrier, Traits::kKVBytes);
    copy(params.tma_k.with(shared.kv_barrier), copy_k.partition_S(gK), copy_k.partition_D(sK));
    copy(params.tma_v.with(shared.kv_barrier), copy_v.partition_S(gV), copy_v.partition_D(sV));
    PipelineState write = cutlass::make_producer_start_state<Pipeline>();
    detail::TileKind kind = first_kind;  // not needed to load a tile
    for (int it = first; it < walk.iterations; it = walk.next_visible(dims, it + 1, kind)) {
      const auto query_tile = make_coord(walk.q_tile(it), 0);
      Tensor gQ = local_tile(mQ(_, _, walk.head(it), walk.b), typename Traits::QueriesByDim{}, query_tile);
      Tensor gDout = local_tile(mDout(_, _, walk.head(it), walk.b), typename Traits::QueriesByDim{}, query_tile);
      pipeline_q.producer_acquire(write);
      auto* barrier = pipeline_q.producer_get_barrier(write);
      copy(params.tma_q.with(*barrier), copy_q.partition_S(gQ), tQsQ(_, _, _, write.index()));
      copy(params.tma_dout.with(*barrier), copy_dout.partition_S(gDout), tDsDout(_, _, _, write.index()));
      ++write;
    }
    // Every stage handed back before the CTA may retire.
    pipeline_q.producer_tail(write);
    return;
  }

  // Consumers.
  cutlass::arch::warpgroup_reg_alloc<Traits::kConsumerRegisters>();
  const int consumer_thread = static_cast<int>(threadIdx.x) - 128;
  const int consumer = warpgroup - 1;
  const bool lead = consumer_thread % 128 == 0;
  typename Traits::MmaScores mma_scores;
  typename Traits::MmaKeyGrads mma_key_grads;
  typename Traits::MmaQueryGrad mma_query_grad;
  auto thread_scores = mma_scores.get_thread_slice(consumer_thread);
  auto thread_key_grads = mma_key_grads.get_thread_slice(consumer_thread);
  auto thread_query_grad = mma_query_grad.get_thread_slice(consumer_thread % 128);
  Tensor tSrK = thread_scores.partition_fragment_A(sK);
  Tensor tSrV = thread_scores.partition_fragment_A(sV);
  Tensor tSrQ = thread_scores.partition_fragment_B(sQ);             // (MMA, MMA_N, MMA_K, stage)
  Tensor tSrDout = thread_scores.partition_fragment_B(sDout);       // (MMA, MMA_N, MMA_K, stage)
  Tensor tGrDoutT = thread_key_grads.partition_fragment_B(sDoutT);  // (MMA, MMA_N, MMA_K, stage)
  Tensor tGrQt = thread_key_grads.partition_fragment_B(sQt);        // (MMA, MMA_N, MMA_K, stage)
  // This consumer's share of dQ = dS K (backward_sm90_traits.hpp): its columns of K^T, or its keys.
  constexpr int kDqColumns = Traits::kDqColumns;
  const int dq_column0 = Traits::kDqSplitsKeys ? 0 : consumer * kDqColumns;
  const int dq_key_block = Traits::kDqSplitsKeys ? consumer : 0;
  Tensor sKtMine = local_tile(sKt, Shape<typename Traits::DqColumns, typename Traits::DqKeys>{},
                              make_coord(dq_column0 / kDqColumns, dq_key_block));
  Tensor tQrKt = thread_query_grad.partition_fragment_B(sKtMine);
  Tensor tSrS = partition_fragment_C(mma_scores, typename Traits::KeysByQueries{});
  Tensor tSrDp = partition_fragment_C(mma_scores, typename Traits::KeysByQueries{});
  Tensor tGrDv = partition_fragment_C(mma_key_grads, typename Traits::KeysByDim{});
  Tensor tGrDk = partition_fragment_C(mma_key_grads, typename Traits::KeysByDim{});
  Tensor tQrDq = partition_fragment_C(mma_query_grad, typename Traits::QueriesByDqColumns{});
  Tensor tGrP = make_tensor<T>(scores_as_a_operand(tSrS.layout()));
  Tensor tGrDs = make_tensor<T>(scores_as_a_operand(tSrDp.layout()));
  // Rows (keys) and columns (queries) of S^T and dP^T, with their tile coordinates; the same for
  // dK and dV (keys, head dim).
  Tensor p = make_tensor(tSrS.data(), rows_cols_view(tSrS.layout()));
  Tensor ds = make_tensor(tSrDp.data(), rows_cols_view(tSrDp.layout()));
  Tensor score_coords = thread_scores.partition_C(make_identity_tensor(typename Traits::KeysByQueries{}));
  Tensor score_at = make_tensor(score_coords.data(), rows_cols_view(score_coords.layout()));
  Tensor dv = make_tensor(tGrDv.data(), rows_cols_view(tGrDv.layout()));
  Tensor dk = make_tensor(tGrDk.data(), rows_cols_view(tGrDk.layout()));
  Tensor grad_coords = thread_key_grads.partition_C(make_identity_tensor(typename Traits::KeysByDim{}));
  Tensor grad_at = make_tensor(grad_coords.data(), rows_cols_view(grad_coords.layout()));
  constexpr int kRows = decltype(size<0>(p))::value, kCols = decltype(size<1>(p))::value;

  // The keys' positions and documents, found once (masked_index). Masks given as ranges are
  // refused on this path, so the test of a pair leaves them out.
  detail::MaskedIndex keys[kRows];
  CUTE_UNROLL
  for (int r = 0; r < kRows; ++r)
    keys[r] = detail::masked_index(dims.mask, dims.k_positions, walk.k_first + get<0>(score_at(r, 0)), dims.seq_k);

  clear(tGrDv);
  clear(tGrDk);
  // This consumer's share of a dQ tile in shared memory, and dQ as its TMA reduce-add sees it.
  Tensor sDq = make_tensor(make_smem_ptr(shared.dq.data() + consumer * cosize_v<typename Traits::SmemLayoutDq>),
                           typename Traits::SmemLayoutDq{});
  auto copy_dq = params.tma_dq.get_slice(0);
  Tensor tDqsDq = copy_dq.partition_S(sDq);
  Tensor mDq = params.tma_dq.get_tma_tensor(make_shape(dims.seq_q, D, dims.heads, dims.batch));
  // Where this thread's dQ pairs go in the swizzled share (Traits::dq_thread_offset).
  const std::uint32_t dq_thread_bytes =
      detail::shared_address(shared.dq.data() + consumer * cosize_v<typename Traits::SmemLayoutDq>) +
      4 * Traits::dq_thread_offset(consumer_thread % 128);
  const std::uint32_t dq_swizzle = Traits::dq_swizzle(consumer_thread % 128);
  // Where this thread's dS^T pairs go in the first dS buffer (Traits::ds_thread_offset).
  const std::uint32_t ds_thread_bytes =
      detail::shared_address(shared.ds.data()) + Traits::ds_thread_offset(consumer_thread);
  const std::uint32_t ds_swizzle = Traits::ds_swizzle(consumer_thread);
  // Each query tile's lse (in the exp2 domain: +inf for a row that sees no key anywhere or lies
  // past the sequence, so that all its P are 0) and D, staged in shared memory one tile ahead:
  // consumer threads 0 .. kBlockM - 1 fetch a row's lse, the next kBlockM its D, while the
  // tensor cores work on the tile before; the softmax then reads them without waiting on memory.
  const bool fetches_lse = consumer_thread < kBlockM;
  auto fetch_row_statistic = [&](int it) {
    if (it >= walk.iterations || consumer_thread >= 2 * kBlockM) return 0.f;
    const int query = walk.q_tile(it) * kBlockM + consumer_thread % kBlockM;
    if (query >= dims.seq_q) return fetches_lse ? -INFINITY : 0.f;
    const std::int64_t at = (static_cast<std::int64_t>(walk.b) * dims.heads + walk.head(it)) * dims.seq_q + query;
    return __ldg((fetches_lse ? args.lse : args.delta) + at);
  };
  auto stage_row_statistic = [&](float fetched, int buffer) {
    if (consumer_thread >= 2 * kBlockM) return;
    shared.row_statistics[buffer][fetches_lse ? 0 : 1][consumer_thread % kBlockM] =
        fetches_lse ? (fetched == -INFINITY ? INFINITY : fetched * kLog2e) : fetched;
  };

  if (first < walk.iterations) {
    cutlass::arch::ClusterTransactionBarrier::wait(&shared.kv_barrier, 0);
    PipelineState read;
    int buffer = 0;
    stage_row_statistic(fetch_row_statistic(first), 0);
    named_barrier_sync(3, Traits::kConsumerThreads);
    detail::TileKind kind = first_kind, next_kind = detail::TileKind::kSkip;
    for (int it = first; it < walk.iterations;) {
      const int head = walk.head(it), q_first = walk.q_tile(it) * kBlockM;
      const int next = walk.next_visible(dims, it + 1, next_kind);
      pipeline_q.consumer_wait(read);
      issue_gemm<false>(mma_scores, tSrK, tSrQ(_, _, _, read.index()), tSrS, true);
      issue_gemm<false>(mma_scores, tSrV, tSrDout(_, _, _, read.index()), tSrDp, true);
      const float next_statistic = fetch_row_statistic(next);
      wait_for_products<1>(tSrS);

      // P^T = exp(scale S^T - lse) (0 where masked) while the tensor cores compute dP^T: the
      // exponentials take the SM's special-function units about as long as one of the tile's
      // products takes its tensor cores.
      const bool partial = kind == detail::TileKind::kPartial;
      const float* lse_log2_of = shared.row_statistics[buffer][0];
      const float* delta_of = shared.row_statistics[buffer][1];
      CUTE_UNROLL
      for (int c = 0; c < kCols; ++c) {
        const int column = get<1>(score_at(0, c));
        const float lse_log2 = lse_log2_of[column];
        const detail::MaskedIndex query_index =
            partial ? detail::masked_index(dims.mask, dims.q_positions, q_first + column, dims.seq_q)
                    : detail::MaskedIndex{};
        CUTE_UNROLL
        for (int r = 0; r < kRows; ++r) {
          const bool shown = !partial || detail::visible_pair<detail::kWithoutRanges>(dims.mask, query_index, keys[r]);
          p(r, c) = shown ? detail::probability_from_log2(fmaf(p(r, c), dims.scale_log2, -lse_log2)) : 0.f;
        }
      }
      round_into(tSrS, tGrP);
      // dV += P^T dO (the scale of dK is applied once, at the end) while dS^T = P^T (dP^T - D)
      // is formed.
      issue_gemm<true>(mma_key_grads, tGrP, tGrDoutT(_, _, _, read.index()), tGrDv, false);
      wait_for_products<1>(tSrDp);
      CUTE_UNROLL
      for (int c = 0; c < kCols; ++c) {
        const float delta = delta_of[get<1>(score_at(0, c))];
        CUTE_UNROLL
        for (int r = 0; r < kRows; ++r) ds(r, c) = p(r, c) * (ds(r, c) - delta);
      }
      round_into(tSrDp, tGrDs);
      // dK += dS^T Q.
      issue_gemm<true>(mma_key_grads, tGrDs, tGrQt(_, _, _, read.index()), tGrDk, false);

      // dS into shared memory (query-contiguous), rounded like the other operands, and the next
      // tile's lse and D into the other buffer (the previous tile's softmax read it before the
      // last barrier); both consumers' keys are needed before either computes dQ = dS K, and the
      // barrier shows the next tile's lse and D to both.
      {
        const std::uint32_t thread_bytes = opaque(ds_thread_bytes) + buffer * Traits::kDsBufferBytes;
        CUTE_UNROLL
        for (int e1 = 0; e1 < 2; ++e1) {
          CUTE_UNROLL
          for (int j = 0; j < kBlockM / 8; ++j) {
            const int i = 4 * j + 2 * e1;  // the pair's first value: ((2, 2, queries / 8)) in tSrDp
            store_shared_word((thread_bytes + Traits::ds_pair_offset(e1, j)) ^ ds_swizzle,
                              pack_pair<T>(tSrDp(i), tSrDp(i + 1)));
          }
        }
      }
      stage_row_statistic(next_statistic, buffer ^ 1);
      fence_shared_for_async();
      named_barrier_sync(3, Traits::kConsumerThreads);
      Tensor tQrDs = thread_query_grad.partition_fragment_A(local_tile(
          sDs(_, _, buffer), Shape<typename Traits::Queries, typename Traits::DqKeys>{}, make_coord(0, dq_key_block)));
      issue_gemm<false>(mma_query_grad, tQrDs, tQrKt, tQrDq, true);
      wait_for_products<0>(tGrDv, tGrDk, tGrP, tGrDs, tQrDq);
      pipeline_q.consumer_release(read);
      ++read;

      // dQ += scale dS K: this consumer's share of the tile, into shared memory (once the
      // previous tile's reduce-add has read it), then one TMA reduce-add of the whole share.
      if (lead) bulk_wait_read();
      named_barrier_sync(4 + consumer, 128);
      {
        const std::uint32_t thread_bytes = opaque(dq_thread_bytes);
        CUTE_UNROLL
        for (int e1 = 0; e1 < 2; ++e1) {
          CUTE_UNROLL
          for (int j = 0; j < kDqColumns / 8; ++j) {
            const int i = 4 * j + 2 * e1;  // the pair's first value: ((2, 2, columns / 8)) in tQrDq
            store_shared_pair((thread_bytes + 4 * Traits::dq_pair_offset(e1, j)) ^ dq_swizzle, dims.scale * tQrDq(i),
                              dims.scale * tQrDq(i + 1));
          }
        }
      }
      fence_shared_for_async();
      named_barrier_sync(4 + consumer, 128);
      if (lead) {
        Tensor gDq = local_tile(mDq(_, _, head, walk.b), typename Traits::QueriesByDqColumns{},
                                make_coord(walk.q_tile(it), dq_column0 / kDqColumns));
        copy(params.tma_dq, tDqsDq, copy_dq.partition_D(gDq));
        bulk_commit();
      }
      buffer ^= 1;
      it = next;
      kind = next_kind;
    }
    if (lead) bulk_wait();
  }

  // Epilogue: dK (scaled) and dV of the CTA's keys, complete over the whole GQA group; each key
  // row belongs to one CTA, so the accumulate mode adds without atomics.
  constexpr int kPairs = decltype(size<1>(dv))::value / 2;
  CUTE_UNROLL
  for (int r = 0; r < kRows; ++r) {
    const int key = walk.k_first + get<0>(grad_at(r, 0));
    if (key >= dims.seq_k) continue;
    const std::int64_t dk_at = walk.b * args.dk.batch + key * args.dk.seq + walk.kv_head * args.dk.head;
    const std::int64_t dv_at = walk.b * args.dv.batch + key * args.dv.seq + walk.kv_head * args.dv.head;
    CUTE_UNROLL
    for (int i = 0; i < kPairs; ++i) {
      const int col = get<1>(grad_at(r, 2 * i));
      const float dk0 = dims.scale * dk(r, 2 * i), dk1 = dims.scale * dk(r, 2 * i + 1);
      const float dv0 = dv(r, 2 * i), dv1 = dv(r, 2 * i + 1);
      if (args.store_dkdv) {
        *reinterpret_cast<std::uint32_t*>(static_cast<T*>(args.dk.data) + dk_at + col) = pack_pair<T>(dk0, dk1);
        *reinterpret_cast<std::uint32_t*>(static_cast<T*>(args.dv.data) + dv_at + col) = pack_pair<T>(dv0, dv1);
      } else if (args.overwrite_dkdv) {
        *reinterpret_cast<float2*>(static_cast<float*>(args.dk.data) + dk_at + col) = make_float2(dk0, dk1);
        *reinterpret_cast<float2*>(static_cast<float*>(args.dv.data) + dv_at + col) = make_float2(dv0, dv1);
      } else {
        float2* dk_pair = reinterpret_cast<float2*>(static_cast<float*>(args.dk.data) + dk_at + col);
        float2* dv_pair = reinterpret_cast<float2*>(static_cast<float*>(args.dv.data) + dv_at + col);
        const float2 dk_old = *dk_pair, dv_old = *dv_pair;
        *dk_pair = make_float2(dk_old.x + dk0, dk_old.y + dk1);
        *dv_pair = make_float2(dv_old.x + dv0, dv_old.y + dv1);
      }
    }
  }
}

template <class Traits>
cudaError_t launch(const detail::BackwardArgs& args, cudaStream_t stream) {
  using T = typename Traits::T;
  const detail::AttentionDims& d = args.dims;
  const auto q = gmem_tensor<T>(args.q, d.seq_q, d.head_dim, d.heads, d.batch);
  const auto dout = gmem_tensor<T>(args.dout, d.seq_q, d.head_dim, d.heads, d.batch);
  const auto k = gmem_tensor<T>(args.k, d.seq_k, d.head_dim, d.kv_heads, d.batch);
  const auto v = gmem_tensor<T>(args.v, d.seq_k, d.head_dim, d.kv_heads, d.batch);
  const auto dq = gmem_tensor<float>(args.dq_accum, d.seq_q, d.head_dim, d.heads, d.batch);
  const KernelParams<Traits> params{args,
                                    make_tma_copy(SM90_TMA_LOAD{}, k, typename Traits::SmemLayoutK{}),
                                    make_tma_copy(SM90_TMA_LOAD{}, v, typename Traits::SmemLayoutV{}),
                                    make_tma_copy(SM90_TMA_LOAD{}, q, take<0, 2>(typename Traits::SmemLayoutQ{})),
                                    make_tma_copy(SM90_TMA_LOAD{}, dout, take<0, 2>(typename Traits::SmemLayoutDout{})),
                                    make_tma_copy(SM90_TMA_REDUCE_ADD{}, dq, typename Traits::SmemLayoutDq{})};
  const std::int64_t tiles = (d.seq_k + Traits::kBlockN - 1) / Traits::kBlockN;
  return detail::launch_tiles(backward_sm90_kernel<Traits>, params, tiles * d.batch * d.kv_heads, Traits::kThreads,
                              Traits::kSmemBytes, stream);
}

}  // namespace

cudaError_t launch_flash_backward_sm90(const detail::BackwardArgs& args, detail::ElementType dtype,
                                       cudaStream_t stream) {
  if (!args.atomic_dq) return cudaErrorInvalidValue;  // the deterministic mode runs on the sm_80 kernels
  return detail::dispatch_dtype_dims(
      detail::Sm90DimPairs{}, dtype, args.dims.head_dim, args.dims.value_dim, [&](auto element, auto head_dim, auto) {
        return launch<BackwardSm90Traits<CutlassElement<decltype(element)>, decltype(head_dim)::value>>(args, stream);
      });
}

}  // namespace hopper
}  // namespace rfa_cuda
