// SPDX-License-Identifier: BSD-3-Clause
// The Hopper (sm_90a) forward: TMA loads, wgmma, warp specialization. Shapes and layouts in
// forward_sm90_traits.hpp; the same mask, position maps, GQA, output modes and fused ring merge
// as the sm_80 kernel (flash_forward.cu), whose tile walk (QueryTile) it shares.
//
// Per CTA: one producer warpgroup (a single thread issues every TMA copy, then the warpgroup
// idles on 40 registers) and two consumer warpgroups of 64 query rows (232 registers each).
// A consumer's key loop overlaps its own work: the scores of tile j and the P V product of
// tile j - 1 are issued together, and the softmax of tile j runs while the P V product is on
// the tensor cores. The two consumers also take turns issuing (two named barriers), so one's
// softmax overlaps the other's products.
#include <cmath>
#include <cstdint>

#include <cutlass/arch/barrier.h>
#include <cutlass/arch/reg_reconfig.h>
#include <cute/tensor.hpp>
#include <cutlass/pipeline/pipeline.hpp>

#include "hopper/forward_sm90.hpp"
#include "hopper/forward_sm90_traits.hpp"
#include "hopper/fragment_views.hpp"
#include "hopper/warpgroup_ops.cuh"
#include "launch_dispatch.cuh"
#include "query_tile_kernel.cuh"
#include "row_epilogue.cuh"

namespace rfa_cuda {
namespace hopper {
namespace {

using namespace cute;

template <class Traits>
using TmaQ = decltype(make_tma_copy(SM90_TMA_LOAD{}, std::declval<GmemTensor<typename Traits::T>>(),
                                    typename Traits::SmemLayoutQ{}));
template <class Traits>
using TmaKV = decltype(make_tma_copy(SM90_TMA_LOAD{}, std::declval<GmemTensor<typename Traits::T>>(),
                                     take<0, 2>(typename Traits::SmemLayoutK{})));

template <class Traits>
struct KernelParams {
  detail::ForwardArgs args;
  TmaQ<Traits> tma_q;
  TmaKV<Traits> tma_k, tma_v;
};

// The consumers' turn-taking: warpgroup w waits on barrier 1 + w before issuing its products
// and then lets the other one go. 256 = the 128 threads that wait plus the 128 that arrive.
__device__ __forceinline__ void wait_for_turn(int consumer) { named_barrier_sync(1 + consumer, 256); }
__device__ __forceinline__ void pass_turn(int consumer) { named_barrier_arrive(1 + (1 - consumer), 256); }

template <class Traits, bool kMerge>
__global__ void __launch_bounds__(Traits::kThreads, 1)
    forward_sm90_kernel(const __grid_constant__ KernelParams<Traits> params) {
  using T = typename Traits::T;
  using Pipeline = typename Traits::Pipeline;
  using PipelineState = typename cutlass::PipelineState<Traits::kStages>;
  constexpr int kBlockM = Traits::kBlockM, kBlockN = Traits::kBlockN, D = Traits::kHeadDim;

  extern __shared__ __align__(1024) unsigned char shared_bytes[];
  auto& shared = *reinterpret_cast<typename Traits::SharedStorage*>(shared_bytes);
  const detail::AttentionDims& dims = params.args.dims;
  const detail::QueryTile<kBlockM, kBlockN> tile(dims);
  const int warpgroup = static_cast<int>(threadIdx.x) / 128;

  const auto pipeline_params = warpgroup_pipeline_params<Pipeline>(Traits::kKVTileBytes, Traits::kConsumerThreads);
  if (threadIdx.x == 0) cutlass::arch::ClusterTransactionBarrier::init(&shared.q_barrier, 1);
  // Warp 0 initializes both pipelines' barriers (and fences the initializations).
  Pipeline pipeline_k(shared.pipeline_k, pipeline_params, Shape<_1, _1, _1>{});
  Pipeline pipeline_v(shared.pipeline_v, pipeline_params, Shape<_1, _1, _1>{});
  __syncthreads();

  Tensor sQ = make_tensor(make_smem_ptr(shared.q.data()), typename Traits::SmemLayoutQ{});
  Tensor sK = make_tensor(make_smem_ptr(shared.k.data()), typename Traits::SmemLayoutK{});
  Tensor sV = make_tensor(make_smem_ptr(shared.v.data()), typename Traits::SmemLayoutV{});
  Tensor sVt = make_tensor(make_smem_ptr(shared.v.data()), typename Traits::SmemLayoutVt{});
  detail::TileKind first_kind = detail::TileKind::kSkip;
  const int first_tile = tile.first_visible(dims, first_kind);

  if (warpgroup == 0) {  // producer
    cutlass::arch::warpgroup_reg_dealloc<Traits::kProducerRegisters>();
    if (threadIdx.x != 0 || first_tile >= tile.num_k_tiles) return;
    Tensor mQ = params.tma_q.get_tma_tensor(make_shape(dims.seq_q, D, dims.heads, dims.batch));
    Tensor mK = params.tma_k.get_tma_tensor(make_shape(dims.seq_k, D, dims.kv_heads, dims.batch));
    Tensor mV = params.tma_v.get_tma_tensor(make_shape(dims.seq_k, D, dims.kv_heads, dims.batch));
    Tensor gQ = local_tile(mQ(_, _, tile.h, tile.b), typename Traits::BlockMD{}, make_coord(tile.q_first / kBlockM, 0));
    Tensor gK = local_tile(mK(_, _, tile.kv_head, tile.b), typename Traits::BlockND{}, make_coord(_, 0));
    Tensor gV = local_tile(mV(_, _, tile.kv_head, tile.b), typename Traits::BlockND{}, make_coord(_, 0));
    auto copy_q = params.tma_q.get_slice(0);
    auto copy_k = params.tma_k.get_slice(0);
    auto copy_v = params.tma_v.get_slice(0);
    Tensor tKgK = copy_k.partition_S(gK);
    Tensor tKsK = copy_k.partition_D(sK);
    Tensor tVgV = copy_v.partition_S(gV);
    Tensor tVsV = copy_v.partition_D(sV);

    cutlass::arch::ClusterTransactionBarrier::arrive_and_expect_tx(&shared.q_barrier, Traits::kQBytes);
    copy(params.tma_q.with(shared.q_barrier), copy_q.partition_S(gQ), copy_q.partition_D(sQ));
    PipelineState write = cutlass::make_producer_start_state<Pipeline>();
    detail::TileKind kind = first_kind;  // not needed to load a tile
    for (int k_tile = first_tile; k_tile < tile.num_k_tiles; k_tile = tile.next_visible(dims, k_tile + 1, kind)) {
      pipeline_k.producer_acquire(write);
      copy(params.tma_k.with(*pipeline_k.producer_get_barrier(write)), tKgK(_, _, _, k_tile),
           tKsK(_, _, _, write.index()));
      pipeline_v.producer_acquire(write);
      copy(params.tma_v.with(*pipeline_v.producer_get_barrier(write)), tVgV(_, _, _, k_tile),
           tVsV(_, _, _, write.index()));
      ++write;
    }
    // Every stage handed back before the CTA may retire.
    pipeline_k.producer_tail(write);
    pipeline_v.producer_tail(write);
    return;
  }

  // Consumers.
  cutlass::arch::warpgroup_reg_alloc<Traits::kConsumerRegisters>();
  const int consumer_thread = static_cast<int>(threadIdx.x) - 128;
  const int consumer = warpgroup - 1;
  typename Traits::MmaQK mma_qk;
  typename Traits::MmaPV mma_pv;
  auto thread_qk = mma_qk.get_thread_slice(consumer_thread);
  auto thread_pv = mma_pv.get_thread_slice(consumer_thread);
  Tensor tSrQ = thread_qk.partition_fragment_A(sQ);
  Tensor tSrK = thread_qk.partition_fragment_B(sK);    // (MMA, MMA_N, MMA_K, stage)
  Tensor tOrVt = thread_pv.partition_fragment_B(sVt);  // (MMA, MMA_N, MMA_K, stage)
  Tensor tSrS = partition_fragment_C(mma_qk, typename Traits::BlockMN{});
  Tensor tOrO = partition_fragment_C(mma_pv, typename Traits::BlockMD{});
  Tensor tOrP = make_tensor<T>(scores_as_a_operand(tSrS.layout()));
  // Rows and columns of the scores and the output, with the tile coordinates of each value.
  Tensor scores = make_tensor(tSrS.data(), rows_cols_view(tSrS.layout()));
  Tensor score_coords = thread_qk.partition_C(make_identity_tensor(typename Traits::BlockMN{}));
  Tensor score_at = make_tensor(score_coords.data(), rows_cols_view(score_coords.layout()));
  Tensor out = make_tensor(tOrO.data(), rows_cols_view(tOrO.layout()));
  Tensor out_coords = thread_pv.partition_C(make_identity_tensor(typename Traits::BlockMD{}));
  Tensor out_at = make_tensor(out_coords.data(), rows_cols_view(out_coords.layout()));
  constexpr int kRows = decltype(size<0>(scores))::value;
  static_assert(kRows == decltype(size<0>(out))::value, "both products give a thread the same rows");

  // Running max (exp2 domain) and this thread's partial row sums (reduced over the quad at the end).
  float row_max[kRows], row_sum[kRows];
  CUTE_UNROLL
  for (int r = 0; r < kRows; ++r) {
    row_max[r] = -INFINITY;
    row_sum[r] = 0.f;
  }

  // The mask inside a partial tile: each row's and each column's position and document found
  // once (masked_index), then compared per element (a row's columns are a thread's, shared by
  // its two rows). Without ranges, which these kernels refuse.
  detail::MaskedIndex rows[kRows];
  CUTE_UNROLL
  for (int r = 0; r < kRows; ++r)
    rows[r] = detail::masked_index(dims.mask, dims.q_positions, tile.q_first + get<0>(score_at(r, 0)), dims.seq_q);
  auto mask_partial_tile = [&](int k_tile) {
    CUTE_UNROLL
    for (int c = 0; c < size<1>(scores); ++c) {
      const detail::MaskedIndex key =
          detail::masked_index(dims.mask, dims.k_positions, k_tile * kBlockN + get<1>(score_at(0, c)), dims.seq_k);
      CUTE_UNROLL
      for (int r = 0; r < kRows; ++r)
        if (!detail::visible_pair<detail::kWithoutRanges>(dims.mask, rows[r], key)) scores(r, c) = -INFINITY;
    }
  };

  // Masks a partial tile (`kind`), then turns the scores into probabilities against the updated
  // running max; returns in `rescale` the factor that the earlier output rows must take.
  auto softmax_step = [&](int k_tile, detail::TileKind kind, float(&rescale)[kRows]) {
    if (kind == detail::TileKind::kPartial) mask_partial_tile(k_tile);
    CUTE_UNROLL
    for (int r = 0; r < kRows; ++r) {
      float tile_max = -INFINITY;
      CUTE_UNROLL
      for (int c = 0; c < size<1>(scores); ++c) tile_max = fmaxf(tile_max, scores(r, c));
      tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));
      tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 2));
      const float new_max = fmaxf(row_max[r], tile_max * dims.scale_log2);
      // A row that has seen only masked keys keeps max -inf; subtracting 0 keeps exp2 at 0, not NaN.
      const float base = new_max == -INFINITY ? 0.f : new_max;
      rescale[r] = exp2f(row_max[r] - base);
      row_max[r] = new_max;
      float sum = 0.f;
      CUTE_UNROLL
      for (int c = 0; c < size<1>(scores); ++c) {
        const float p = exp2f(fmaf(scores(r, c), dims.scale_log2, -base));
        scores(r, c) = p;
        sum += p;
      }
      row_sum[r] = row_sum[r] * rescale[r] + sum;
    }
  };

  if (consumer == 1) pass_turn(consumer);  // the first consumer issues first
  int k_tile = first_tile;
  if (k_tile < tile.num_k_tiles) {
    PipelineState read_k, read_v;
    float rescale[kRows];
    cutlass::arch::ClusterTransactionBarrier::wait(&shared.q_barrier, 0);

    pipeline_k.consumer_wait(read_k);
    wait_for_turn(consumer);
    issue_gemm<false>(mma_qk, tSrQ, tSrK(_, _, _, read_k.index()), tSrS, true);
    pass_turn(consumer);
    wait_for_products<0>(tSrS);
    pipeline_k.consumer_release(read_k);
    ++read_k;
    detail::TileKind kind = first_kind;
    softmax_step(k_tile, kind, rescale);
    round_into(tSrS, tOrP);

    bool first_product = true;
    for (k_tile = tile.next_visible(dims, k_tile + 1, kind); k_tile < tile.num_k_tiles;
         k_tile = tile.next_visible(dims, k_tile + 1, kind)) {
      // Both tiles in before taking the turn, so that a late load stalls only this consumer.
      pipeline_k.consumer_wait(read_k);
      pipeline_v.consumer_wait(read_v);
      wait_for_turn(consumer);
      issue_gemm<false>(mma_qk, tSrQ, tSrK(_, _, _, read_k.index()), tSrS, true);
      issue_gemm<true>(mma_pv, tOrP, tOrVt(_, _, _, read_v.index()), tOrO, first_product);
      pass_turn(consumer);
      wait_for_products<1>(tSrS);  // the scores are in; the P V product may still run
      pipeline_k.consumer_release(read_k);
      ++read_k;
      softmax_step(k_tile, kind, rescale);
      wait_for_products<0>(tOrO, tOrP);
      pipeline_v.consumer_release(read_v);
      ++read_v;
      CUTE_UNROLL
      for (int r = 0; r < kRows; ++r) {
        CUTE_UNROLL
        for (int c = 0; c < size<1>(out); ++c) out(r, c) *= rescale[r];
      }
      round_into(tSrS, tOrP);
      first_product = false;
    }
    pipeline_v.consumer_wait(read_v);
    wait_for_turn(consumer);
    issue_gemm<true>(mma_pv, tOrP, tOrVt(_, _, _, read_v.index()), tOrO, first_product);
    pass_turn(consumer);
    wait_for_products<0>(tOrO, tOrP);
    pipeline_v.consumer_release(read_v);
  } else {
    clear(tOrO);
  }
  if (consumer == 0) wait_for_turn(consumer);  // takes the second consumer's last turn back

  // Epilogue: normalize, write out and lse (row_epilogue.cuh).
  const detail::ForwardArgs& args = params.args;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const std::int64_t lse_row0 = (static_cast<std::int64_t>(tile.b) * dims.heads + tile.h) * dims.seq_q;
  float running_lse[kRows];
  CUTE_UNROLL
  for (int r = 0; r < kRows; ++r) {
    running_lse[r] = -INFINITY;
    row_sum[r] += __shfl_xor_sync(0xffffffffu, row_sum[r], 1);
    row_sum[r] += __shfl_xor_sync(0xffffffffu, row_sum[r], 2);
    const int row = tile.q_first + get<0>(out_at(r, 0));
    if (kMerge && row < dims.seq_q) running_lse[r] = args.lse[lse_row0 + row];
  }
  // Every lane of a row's quad has read the running lse before the quad's first lane overwrites it.
  __syncwarp();
  constexpr int kPairs = decltype(size<1>(out))::value / 2;
  CUTE_UNROLL
  for (int r = 0; r < kRows; ++r) {
    const int row = tile.q_first + get<0>(out_at(r, 0));
    if (row >= dims.seq_q) continue;
    detail::RowEpilogue e;
    if (!detail::row_epilogue(kMerge, row_sum[r], row_max[r], running_lse[r], e)) continue;
    const float scale_block = e.block, scale_running = e.running;
    if (lane % 4 == 0) args.lse[lse_row0 + row] = e.lse;
    const std::int64_t offset = tile.b * args.out.batch + row * args.out.seq + tile.h * args.out.head;
    // The columns c and c + 1 of a pair are adjacent in memory.
    float2 running[kMerge ? kPairs : 1];
    CUTE_UNROLL
    for (int i = 0; i < (kMerge ? kPairs : 1); ++i) running[i] = make_float2(0.f, 0.f);
    if (kMerge && scale_running != 0.f) {  // a fresh row's out may hold anything, NaN included
      const float* row_out = static_cast<const float*>(args.out.data) + offset;
      CUTE_UNROLL
      for (int i = 0; i < (kMerge ? kPairs : 1); ++i)
        running[i] = *reinterpret_cast<const float2*>(row_out + get<1>(out_at(r, 2 * i)));
    }
    CUTE_UNROLL
    for (int i = 0; i < kPairs; ++i) {
      const int col = get<1>(out_at(r, 2 * i));
      float v0 = out(r, 2 * i) * scale_block, v1 = out(r, 2 * i + 1) * scale_block;
      if (kMerge || args.out_fp32) {
        if constexpr (kMerge) {
          v0 += scale_running * running[i].x;
          v1 += scale_running * running[i].y;
        }
        *reinterpret_cast<float2*>(static_cast<float*>(args.out.data) + offset + col) = make_float2(v0, v1);
      } else {
        *reinterpret_cast<std::uint32_t*>(static_cast<T*>(args.out.data) + offset + col) = pack_pair<T>(v0, v1);
      }
    }
  }
}

template <class Traits, bool kMerge>
cudaError_t launch(const detail::ForwardArgs& args, cudaStream_t stream) {
  using T = typename Traits::T;
  const detail::AttentionDims& d = args.dims;
  const auto q = gmem_tensor<T>(args.q, d.seq_q, d.head_dim, d.heads, d.batch);
  const auto k = gmem_tensor<T>(args.k, d.seq_k, d.head_dim, d.kv_heads, d.batch);
  const auto v = gmem_tensor<T>(args.v, d.seq_k, d.head_dim, d.kv_heads, d.batch);
  const KernelParams<Traits> params{args, make_tma_copy(SM90_TMA_LOAD{}, q, typename Traits::SmemLayoutQ{}),
                                    make_tma_copy(SM90_TMA_LOAD{}, k, take<0, 2>(typename Traits::SmemLayoutK{})),
                                    make_tma_copy(SM90_TMA_LOAD{}, v, take<0, 2>(typename Traits::SmemLayoutV{}))};
  const std::int64_t tiles = (d.seq_q + Traits::kBlockM - 1) / Traits::kBlockM;
  return detail::launch_tiles(forward_sm90_kernel<Traits, kMerge>, params, tiles * d.batch * d.heads, Traits::kThreads,
                              Traits::kSmemBytes, stream);
}

}  // namespace

cudaError_t launch_flash_forward_sm90(const detail::ForwardArgs& args, detail::ElementType dtype, cudaStream_t stream) {
  return detail::dispatch_dtype_dims(
      detail::Sm90DimPairs{}, dtype, args.dims.head_dim, args.dims.value_dim, [&](auto element, auto head_dim, auto) {
        using Traits = ForwardSm90Traits<CutlassElement<decltype(element)>, decltype(head_dim)::value>;
        return args.merge ? launch<Traits, true>(args, stream) : launch<Traits, false>(args, stream);
      });
}

}  // namespace hopper
}  // namespace rfa_cuda
