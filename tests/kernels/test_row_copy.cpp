// SPDX-License-Identifier: BSD-3-Clause
// The pieces the host kernels load their tiles with: SpreadRowLoad converts every row once
// (scaled, zero-padded) however its steps fall, and RowPrefetcher asks for each line once.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "core/dtype.hpp"
#include "kernels/row_copy.hpp"

namespace rfa {
namespace kernels {
namespace {

constexpr float kSentinel = -7.0f;

struct Source {
  std::vector<float> values;
  std::ptrdiff_t stride;
};

/// rows rows of d values, `stride` apart, value 100 * row + column (exact in fp32, also when
/// scaled by a power of two); what lies between rows is a sentinel.
Source make_source(int rows, int d, std::ptrdiff_t stride) {
  Source s{std::vector<float>(std::size_t(rows) * stride, kSentinel), stride};
  for (int r = 0; r < rows; ++r)
    for (int x = 0; x < d; ++x) s.values[r * stride + x] = float(100 * r + x);
  return s;
}

void expect_converted(const std::vector<float>& dst, int rows, int rows_padded, int d, int ld, float scale) {
  for (int r = 0; r < rows_padded; ++r) {
    for (int x = 0; x < d; ++x) {
      const float want = r < rows ? float(100 * r + x) * scale : 0.0f;
      ASSERT_EQ(dst[r * ld + x], want) << "row " << r << " column " << x;
    }
    for (int x = d; x < ld; ++x) ASSERT_EQ(dst[r * ld + x], kSentinel) << "pitch padding of row " << r << " written";
  }
  for (std::size_t i = std::size_t(rows_padded) * ld; i < dst.size(); ++i)
    ASSERT_EQ(dst[i], kSentinel) << "written past rows_padded";
}

struct SpreadCase {
  int rows, rows_padded, steps, steps_taken;
};

class SpreadRowLoadTest : public ::testing::TestWithParam<SpreadCase> {};

TEST_P(SpreadRowLoadTest, ConvertsEveryRowOnceAndPads) {
  const SpreadCase c = GetParam();
  const int d = 20, ld = 24;
  const Source src = make_source(c.rows, d, 3 * d + 5);
  std::vector<float> dst(std::size_t(c.rows_padded + 2) * ld, kSentinel);
  SpreadRowLoad<float> load(src.values.data(), src.stride, c.rows, c.rows_padded, d, dst.data(), ld, c.steps, 0.5f);
  int converted_before_finish = 0;
  for (int i = 0; i < c.steps_taken; ++i) load.step();
  for (int r = 0; r < c.rows_padded; ++r) converted_before_finish += dst[r * ld] != kSentinel;
  if (c.steps_taken >= c.steps) {
    EXPECT_EQ(converted_before_finish, c.rows_padded) << "all steps taken: every row is due";
  } else {
    // Rows are due evenly: after k of n steps, floor(k * rows_padded / n) of them.
    EXPECT_EQ(converted_before_finish, c.steps_taken * c.rows_padded / c.steps);
  }
  load.finish();
  expect_converted(dst, c.rows, c.rows_padded, d, ld, 0.5f);
  load.finish();  // nothing left: a second finish writes nothing
  load.step();
  expect_converted(dst, c.rows, c.rows_padded, d, ld, 0.5f);
}

INSTANTIATE_TEST_SUITE_P(Steps, SpreadRowLoadTest,
                         ::testing::Values(SpreadCase{96, 96, 256, 256},   // fewer rows than steps
                                           SpreadCase{96, 96, 16, 16},     // several rows per step
                                           SpreadCase{91, 96, 192, 192},   // padded rows
                                           SpreadCase{91, 96, 192, 50},    // finish() does the rest
                                           SpreadCase{5, 6, 1, 0},         // all in finish()
                                           SpreadCase{0, 0, 7, 7},         // an empty tile
                                           SpreadCase{7, 12, 0, 3}));      // steps 0 counts as 1

TEST(SpreadRowLoad, ConvertsBfloat16) {
  const int rows = 13, rows_padded = 18, d = 16, ld = 16;
  std::vector<bf16_t> src(std::size_t(rows) * 2 * d);
  for (int r = 0; r < rows; ++r)
    for (int x = 0; x < d; ++x) src[r * 2 * d + x] = from_float<bf16_t>(float(100 * r + x) / 64.0f);
  std::vector<float> dst(std::size_t(rows_padded) * ld, kSentinel);
  SpreadRowLoad<bf16_t> load(src.data(), 2 * d, rows, rows_padded, d, dst.data(), ld, 4);
  for (int i = 0; i < 4; ++i) load.step();
  for (int r = 0; r < rows_padded; ++r)
    for (int x = 0; x < d; ++x)
      ASSERT_EQ(dst[r * ld + x], r < rows ? to_float(src[r * 2 * d + x]) : 0.0f) << "row " << r << " column " << x;
}

TEST(SpreadRowLoad, DefaultConstructedDoesNothing) {
  SpreadRowLoad<float> load;
  load.step();
  load.finish();
  SUCCEED();
}

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
