// SPDX-License-Identifier: BSD-3-Clause
// The online-softmax merge of one block's partial result into the running one
// (kernels::merge_partial), row by row against the closed form: equal log-sum-exps average the
// outputs; log-sum-exps 100 apart (a block that holds a key scored far above every key seen so
// far, as a sink token's can be) give the larger one's output and log-sum-exp, finite either way
// round; a row whose block saw no key is left alone, and a row that had seen none takes the
// block's; log-sum-exps further apart than fp32's range merge to the larger.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernel_case.hpp"
#include "kernels/flash_attention.hpp"

namespace rfa {
namespace kernels {
namespace {

// Rows of one (batch, head) whose running lse and block lse are given, out 1 + x and the block's
// 10 + x in element x; merged with traps on (no exp may overflow, no difference of lses either),
// then checked against the closed form for each row's lse and the block's weight in out.
void expect_merge(const std::vector<float>& running, const std::vector<float>& block,
                  const std::vector<float>& want_lse, const std::vector<float>& block_weight, float lse_tolerance) {
  constexpr std::int64_t D = 3;
  const std::int64_t rows = std::int64_t(running.size());
  Tensor4<float> out("out", 1, rows, 1, D), block_out("block_out", 1, rows, 1, D);
  Tensor3<float> lse("lse", 1, 1, rows), block_lse("block_lse", 1, 1, rows);
  for (std::int64_t i = 0; i < rows; ++i) {
    lse(0, 0, i) = running[std::size_t(i)];
    block_lse(0, 0, i) = block[std::size_t(i)];
    for (std::int64_t x = 0; x < D; ++x) {
      out(0, i, 0, x) = float(1 + x);
      block_out(0, i, 0, x) = float(10 + x);
    }
  }
  {
    const test::TrappedFloatingPointExceptions trapped;
    merge_partial(out, lse, block_out, block_lse);
  }
  // lse' = log(e^l + e^bl); out' = (e^l out + e^bl block_out) / e^lse'.
  for (std::int64_t i = 0; i < rows; ++i) {
    const std::size_t r = std::size_t(i);
    SCOPED_TRACE(::testing::Message() << "row " << i << ": lse " << running[r] << ", block lse " << block[r]);
    EXPECT_TRUE(std::isfinite(lse(0, 0, i)));
    EXPECT_NEAR(lse(0, 0, i), want_lse[r], lse_tolerance);
    for (std::int64_t x = 0; x < D; ++x) {
      const float want = (1.0f - block_weight[r]) * float(1 + x) + block_weight[r] * float(10 + x);
      EXPECT_NEAR(out(0, i, 0, x), want, 1e-5f) << "element " << x;
    }
  }
}

TEST(MergePartial, MatchesTheClosedFormAndStaysFiniteFarApart) {
  expect_merge({0.0f, 0.0f, 100.0f, 2.0f, -INFINITY}, {0.0f, 100.0f, 0.0f, -INFINITY, 3.0f},
               {std::log(2.0f), 100.0f, 100.0f, 2.0f, 3.0f}, {0.5f, 1.0f, 0.0f, 0.0f, 1.0f}, 1e-5f);
}

// Log-sum-exps further apart than fp32's range (blocks whose scores are near +-2e38): the
// larger one's output and lse, never +inf (the difference overflowing inside the merge), and
// the same whichever side holds the larger.
TEST(MergePartial, LseFartherApartThanFp32sRangeTakesTheLarger) {
  expect_merge({-2.0e38f, 2.0e38f, 3.0e38f, -3.0e38f}, {2.0e38f, -2.0e38f, 3.0e38f, 3.0e38f},
               {2.0e38f, 2.0e38f, 3.0e38f, 3.0e38f}, {1.0f, 0.0f, 0.5f, 1.0f}, 0.0f);
}

}  // namespace
}  // namespace kernels
}  // namespace rfa
