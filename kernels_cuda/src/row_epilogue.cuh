// SPDX-License-Identifier: BSD-3-Clause
// The forward kernels' epilogue arithmetic for one query row (flash_forward.cu, hopper/), from the
// row's exp2-domain running max and its sum of probabilities over this key block:
//  - plain: out = acc / sum, lse = max ln2 + ln(sum); a row that saw no key has sum 0: out 0,
//    lse -inf;
//  - merging into a running result (the ring's online softmax): a row that saw no key keeps its
//    running values; otherwise
//      lse' = log(exp(lse) + exp(lse_block)),  out' = exp(lse - lse') out + exp(lse_block - lse') out_block.
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
  const float block_lse = sum > 0.f ? row_max_log2 * kLn2 + logf(sum) : -INFINITY;
  e = RowEpilogue{block_lse, sum > 0.f ? 1.f / sum : 0.f, 0.f};
  if (!merge) return true;
  if (sum <= 0.f) return false;
  if (running_lse != -INFINITY) {
    const float hi = fmaxf(running_lse, block_lse);
    e.lse = hi + logf(expf(running_lse - hi) + expf(block_lse - hi));
    e.running = expf(running_lse - e.lse);
    e.block *= expf(block_lse - e.lse);
  }
  return true;
}

}  // namespace detail
}  // namespace rfa_cuda
