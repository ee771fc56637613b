// SPDX-License-Identifier: BSD-3-Clause
// The forward kernels' epilogue arithmetic for one query row (flash_forward.cu, hopper/), from the
// row's exp2-domain running max and its sum of probabilities over this key block:
//  - plain: out = acc / sum, lse = max ln2 + ln(sum); a row that saw no key has sum 0: out 0,
//    lse -inf; a NaN sum (a NaN score) stays NaN in both;
//  - merging into a running result (the ring's online softmax): a row that saw no key keeps its
//    running values; otherwise
//      lse' = log(exp(lse) + exp(lse_block)),  out' = exp(lse - lse') out + exp(lse_block - lse') out_block,
//    the two weights formed from d = lse_block - lse alone, as 1 / (1 + exp(-|d|)) for the larger
//    lse and exp(-|d|) times that for the other (from the rounded lse' they would carry its
//    rounding, half an ulp of lse' in the exponent: weights summing to 2 where lses pass 2^24),
//    and lse' as the larger plus log1p(exp(-|d|)). Host tests: tests/cuda/row_epilogue_on_host_test.cpp.
#pragma once

#include <cmath>

namespace rfa_cuda {
namespace detail {

struct RowEpilogue {
  float lse;      // what the row's lse becomes
  float block;    // factor of the block's accumulator
  float running;  // factor of the running out (0: not read; a fresh row's out may hold anything)
};

// False when the row keeps its running values (merging, and nothing visible here).
__device__ __forceinline__ bool row_epilogue(bool merge, float sum, float row_max_log2, float running_lse,
                                             RowEpilogue& e) {
  constexpr float kLn2 = 0.69314718055994530942f;
  // sum == 0 exactly: a NaN sum is not "no key seen" (fmaxf drops a NaN score from the max).
  const float block_lse = sum == 0.f ? -INFINITY : row_max_log2 * kLn2 + logf(sum);
  e = RowEpilogue{block_lse, sum == 0.f ? 0.f : 1.f / sum, 0.f};
  if (!merge) return true;
  if (sum == 0.f) return false;
  if (running_lse != -INFINITY) {
    const float d = block_lse - running_lse;
    const float t = expf(-fabsf(d)), r = 1.f / (1.f + t);  // t = 0 past fp32's range; a NaN d stays NaN
    const bool block_larger = d >= 0.f;
    e.lse = (block_larger ? block_lse : running_lse) + log1pf(t);
    e.running = block_larger ? t * r : r;
    e.block *= block_larger ? r : t * r;
  }
  return true;
}

}  // namespace detail
}  // namespace rfa_cuda
