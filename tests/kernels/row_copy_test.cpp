// SPDX-License-Identifier: BSD-3-Clause
// RowPrefetcher, with which the host kernels ask for their next tiles: each line once, spread
// over the steps of the loop it sits beside.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "core/dtype.hpp"
#include "kernels/row_copy.hpp"

namespace rfa {
namespace kernels {
namespace {

TEST(RowPrefetcher, AsksForEveryLineOnceSpreadOverItsSteps) {
  std::vector<char> rows(std::size_t(10) * 1000);
  RowPrefetcher pf(rows.data(), 1000, 10, 130, 4);  // 130 bytes: 3 lines a row, over 4 steps
  EXPECT_EQ(pf.left(), 30);
  pf.step();
  EXPECT_EQ(pf.left(), 23);  // 30 / 4 lines a step, rounded down so far
  pf.step();
  EXPECT_EQ(pf.left(), 15);
  pf.step();
  pf.step();
  EXPECT_EQ(pf.left(), 0);  // all of them by the last step
  pf.step();
  pf.finish();
  EXPECT_EQ(pf.left(), 0);
}

TEST(RowPrefetcher, FinishAsksForTheRestWhenTheStepsFallShort) {
  std::vector<char> rows(std::size_t(5) * 256);
  RowPrefetcher pf(rows.data(), 256, 5, 256, 100);  // 20 lines over 100 steps
  for (int i = 0; i < 10; ++i) pf.step();
  EXPECT_EQ(pf.left(), 18);
  pf.finish();
  EXPECT_EQ(pf.left(), 0);
}

}  // namespace
}  // namespace kernels
}  // namespace rfa
