// SPDX-License-Identifier: BSD-3-Clause
// The online-softmax merge of one block's partial result into the running one
// (kernels::merge_partial), row by row against the closed form: equal log-sum-exps average the
// outputs; log-sum-exps 100 apart (a block that holds a key scored far above every key seen so
// far, as a sink token's can be) give the larger one's output and log-sum-exp, finite either way
// round; a row whose block saw no key is left alone, and a row that had seen none takes the
// block's.
#include <gtest/gtest.h>

#include <cmath>

#include "kernel_case.hpp"
#include "kernels/flash_attention.hpp"

namespace rfa {
namespace kernels {
namespace {

TEST(MergePartial, MatchesTheClosedFormAndStaysFiniteFarApart) {
  constexpr std::int64_t rows = 5, D = 3;
  Tensor4<float> out("out", 1, rows, 1, D), block_out("block_out", 1, rows, 1, D);
  Tensor3<float> lse("lse", 1, 1, rows), block_lse("block_lse", 1, 1, rows);
  const float running[rows] = {0.0f, 0.0f, 100.0f, 2.0f, -INFINITY};
  const float block[rows] = {0.0f, 100.0f, 0.0f, -INFINITY, 3.0f};
  for (std::int64_t i = 0; i < rows; ++i) {
    lse(0, 0, i) = running[i];
    block_lse(0, 0, i) = block[i];
    for (std::int64_t x = 0; x < D; ++x) {
      out(0, i, 0, x) = float(1 + x);
      block_out(0, i, 0, x) = float(10 + x);
    }
  }
  {
    const test::TrappedFloatingPointExceptions trapped;  // e^100 must not be formed (overflow)
    merge_partial(out, lse, block_out, block_lse);
  }
  // lse' = log(e^l + e^bl); out' = (e^l out + e^bl block_out) / e^lse'.
  const float want_lse[rows] = {std::log(2.0f), 100.0f, 100.0f, 2.0f, 3.0f};
  const float block_weight[rows] = {0.5f, 1.0f, 0.0f, 0.0f, 1.0f};
  for (std::int64_t i = 0; i < rows; ++i) {
    SCOPED_TRACE(::testing::Message() << "row " << i << ": lse " << running[i] << ", block lse " << block[i]);
    EXPECT_TRUE(std::isfinite(lse(0, 0, i)));
    EXPECT_NEAR(lse(0, 0, i), want_lse[i], 1e-5f);
    for (std::int64_t x = 0; x < D; ++x) {
      const float want = (1.0f - block_weight[i]) * float(1 + x) + block_weight[i] * float(10 + x);
      EXPECT_NEAR(out(0, i, 0, x), want, 1e-5f) << "element " << x;
    }
  }
}

}  // namespace
}  // namespace kernels
}  // namespace rfa
