// SPDX-License-Identifier: BSD-3-Clause
// Views of a warpgroup MMA's fp32 accumulator fragment that the Hopper forward needs, as CuTe
// layout functions (host and device; checked against the MMA atoms' own thread-value layouts
// by tests/cuda/hopper_fragment_views_test.cpp).
//
// A 64 x N wgmma accumulator gives each thread values ((2, 2, N/8), MMA_M, MMA_N): two
// adjacent columns, rows r and r + 8, and one pair per group of 8 columns.
#pragma once

#include <cute/layout.hpp>

namespace rfa_cuda {
namespace hopper {

// ((2, 2, V), M, N) -> ((2, M), (2, V, N)): rows first, columns second, so that a softmax can
// walk a thread's rows and, inside each, its columns.
template <class AccLayout>
CUTE_HOST_DEVICE constexpr auto rows_cols_view(AccLayout acc) {
  using namespace cute;
  static_assert(rank(AccLayout{}) == 3 && rank<0>(AccLayout{}) == 3, "a ((2, 2, V), M, N) accumulator layout");
  return make_layout(make_layout(get<0, 1>(acc), get<1>(acc)),
                     make_layout(get<0, 0>(acc), get<0, 2>(acc), get<2>(acc)));
}

// ((2, 2, V), M, N) of a 64 x kBlockN score tile -> ((2, 2, 2), M, (V / 2) N): the same values as
// the A operand of the next wgmma, whose k dimension is the score tile's columns, 16 per step.
// Each 16-column step holds two of the accumulator's 8-column pairs; nothing moves between
// threads, so the probabilities never leave the registers.
template <class AccLayout>
CUTE_HOST_DEVICE constexpr auto scores_as_a_operand(AccLayout acc) {
  using namespace cute;
  static_assert(rank(AccLayout{}) == 3 && rank<0>(AccLayout{}) == 3, "a ((2, 2, V), M, N) accumulator layout");
  static_assert(size<0, 2>(AccLayout{}) % 2 == 0, "an even number of 8-column groups");
  auto pairs = logical_divide(get<0, 2>(acc), Int<2>{});  // (2, V / 2)
  return make_layout(make_layout(get<0, 0>(acc), get<0, 1>(acc), get<0>(pairs)), get<1>(acc),
                     coalesce(make_layout(get<1>(pairs), get<2>(acc))));
}

}  // namespace hopper
}  // namespace rfa_cuda
