// SPDX-License-Identifier: BSD-3-Clause
// A backward's softmax probability, recomputed from the forward's row lse.
#pragma once

namespace rfa_cuda {
namespace detail {

/// 2^x for the exponent x = scale * log2(e) * s - lse * log2(e), at most 1: with scores of 1e6
/// and more the rounding of those two large terms can leave x above 0, and a probability above
/// 1 (up to infinity past x = 128) breaks every gradient's bound. A NaN exponent gives NaN.
__device__ __forceinline__ float probability_from_log2(float x) { return exp2f(x > 0.f ? 0.f : x); }

}  // namespace detail
}  // namespace rfa_cuda
