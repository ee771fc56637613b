// SPDX-License-Identifier: BSD-3-Clause
// Shapes of the Hopper forward (forward_sm90.cu): tile sizes, shared-memory layouts, the two
// warpgroup MMAs and their shared-memory pipelines. Host and device code (the fragment test
// checks these types on the host).
//
// One CTA owns kBlockM = 128 query rows of one (batch, head) and has three warpgroups: the
// producer (one thread issues the TMA loads of Q once and of K and V per key tile, each K and V
// tile in its own stage of a two-stage ring of shared buffers) and two consumers of 64 rows
// each. A consumer computes S = Q K^T with both operands in shared memory and O += P V with P
// from registers (the score accumulators, rounded to 16 bits); V is read transposed in place.
#pragma once

#include <cutlass/numeric_types.h>
#include <cute/tensor.hpp>
#include <cutlass/pipeline/pipeline.hpp>

namespace rfa_cuda {
namespace hopper {

template <typename Element, int kDim>
struct ForwardSm90Traits {
  using T = Element;  // cutlass::bfloat16_t or cutlass::half_t
  static constexpr int kHeadDim = kDim;
  static constexpr int kBlockM = 128;
  static constexpr int kBlockN = 128;
  static constexpr int kStages = 2;
  static constexpr int kConsumerWarpgroups = kBlockM / 64;
  static constexpr int kConsumerThreads = 128 * kConsumerWarpgroups;
  static constexpr int kThreads = 128 + kConsumerThreads;
  // Register budgets after setmaxnreg (65536 registers per SM, one CTA per SM).
  static constexpr int kProducerRegisters = 40;
  static constexpr int kConsumerRegisters = 232;
  static_assert(kHeadDim % 64 == 0, "rows of whole 128-byte swizzle atoms");
  static_assert(kBlockN % 16 == 0, "the PV product steps through the key tile 16 keys at a time");

  using BlockMN = cute::Shape<cute::Int<kBlockM>, cute::Int<kBlockN>>;
  using BlockMD = cute::Shape<cute::Int<kBlockM>, cute::Int<kHeadDim>>;
  using BlockND = cute::Shape<cute::Int<kBlockN>, cute::Int<kHeadDim>>;
  // The consumers split the rows: warpgroup w owns rows 64w .. 64w + 63 of both products.
  using ConsumerAtoms = cute::Layout<cute::Shape<cute::Int<kConsumerWarpgroups>, cute::_1, cute::_1>>;

  // S = Q K^T: M = query rows, N = keys, K = head dim; both operands K-major in shared memory.
  using MmaQK = decltype(cute::make_tiled_mma(
      cute::GMMA::ss_op_selector<T, T, float,
                                 cute::Shape<cute::Int<kBlockM>, cute::Int<kBlockN>, cute::Int<kHeadDim>>>(),
      ConsumerAtoms{}));
  // O += P V: M = query rows, N = head dim, K = keys; P from registers, V^T (head dim
  // contiguous: MN-major) from shared memory.
  using MmaPV = decltype(cute::make_tiled_mma(
      cute::GMMA::rs_op_selector<T, T, float, cute::Shape<cute::Int<kBlockM>, cute::Int<kHeadDim>, cute::Int<kBlockN>>,
                                 cute::GMMA::Major::K, cute::GMMA::Major::MN>(),
      ConsumerAtoms{}));

  // Rows of head_dim elements in 128-byte swizzled atoms (8 rows x 64 elements), the layout
  // both the TMA and the wgmma descriptors address.
  using SwizzleAtom = cute::GMMA::Layout_K_SW128_Atom<T>;
  using SmemLayoutQ = decltype(cute::tile_to_shape(SwizzleAtom{}, BlockMD{}));
  using SmemLayoutK = decltype(cute::tile_to_shape(
      SwizzleAtom{}, cute::Shape<cute::Int<kBlockN>, cute::Int<kHeadDim>, cute::Int<kStages>>{}));
  using SmemLayoutV = SmemLayoutK;
  // V viewed as (head dim, keys, stage) without moving it: element (d, n, s) is V's (n, d, s).
  using SmemLayoutVt = decltype(cute::composition(
      SmemLayoutV{},
      cute::make_ordered_layout(cute::Shape<cute::Int<kHeadDim>, cute::Int<kBlockN>, cute::Int<kStages>>{},
                                cute::Step<cute::_2, cute::_1, cute::_3>{})));

  using Pipeline = cutlass::PipelineTmaAsync<kStages>;

  struct SharedStorage {
    cute::array_aligned<T, cute::cosize_v<SmemLayoutQ>, 1024> q;
    cute::array_aligned<T, cute::cosize_v<SmemLayoutK>, 1024> k;
    cute::array_aligned<T, cute::cosize_v<SmemLayoutV>, 1024> v;
    typename Pipeline::SharedStorage pipeline_k;
    typename Pipeline::SharedStorage pipeline_v;
    alignas(8) std::uint64_t q_barrier;
  };
  static constexpr int kSmemBytes = static_cast<int>(sizeof(SharedStorage));
  static constexpr std::uint32_t kQBytes = kBlockM * kHeadDim * sizeof(T);
  static constexpr std::uint32_t kKVTileBytes = kBlockN * kHeadDim * sizeof(T);
};

}  // namespace hopper
}  // namespace rfa_cuda
