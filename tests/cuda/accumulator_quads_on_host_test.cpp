// SPDX-License-Identifier: BSD-3-Clause
// The regrouping of an mma m16n8k16 accumulator tile into row quads
// (kernels_cuda/src/accumulator_row_quads.cuh), compiled for the host
// (device_code_on_host.hpp): the 32 lanes of a warp, each trading a pair with its partner
// (row_quad_partner, as the backward's __shfl_xor_sync does), must between them hold every element
// of the 16 x 8 tile exactly once, four adjacent columns of one row a lane, each value where the
// accumulator layout documented for mma (lane 4g + t: rows g and g + 8, columns 2t and 2t + 1)
// puts it.
// On Hopper the backward adds its dQ through these quads; a slip here adds gradients to the
// wrong elements, which only a GPU run would otherwise show.
#include <gtest/gtest.h>

#include <array>

// The device header after the stand-ins for CUDA's qualifiers.
#include "device_code_on_host.hpp"

#include "accumulator_row_quads.cuh"

namespace rfa_cuda {
namespace detail {
namespace {

constexpr int kLanes = 32, kRows = 16, kCols = 8;

/// A value that names its element: row * 100 + column.
float element_value(int row, int col) { return static_cast<float>(row * 100 + col); }

/// A lane's accumulators as mma lays them out.
void lane_accumulators(int lane, float (&acc)[4]) {
  const int g = lane / 4, t = lane % 4;
  acc[0] = element_value(g, 2 * t);
  acc[1] = element_value(g, 2 * t + 1);
  acc[2] = element_value(g + 8, 2 * t);
  acc[3] = element_value(g + 8, 2 * t + 1);
}

/// Every lane's quad after the trade.
std::array<AccumulatorRowQuad, kLanes> warp_quads() {
  float acc[kLanes][4], sent[kLanes][2];
  for (int lane = 0; lane < kLanes; ++lane) {
    lane_accumulators(lane, acc[lane]);
    row_quad_outgoing(acc[lane], lane, sent[lane]);
  }
  std::array<AccumulatorRowQuad, kLanes> quads{};
  for (int lane = 0; lane < kLanes; ++lane) quads[lane] = row_quad(acc[lane], sent[row_quad_partner(lane)], lane);
  return quads;
}

TEST(AccumulatorRowQuads, EveryElementOnceWithItsValue) {
  int seen[kRows][kCols] = {};
  const std::array<AccumulatorRowQuad, kLanes> quads = warp_quads();
  for (int lane = 0; lane < kLanes; ++lane) {
    const AccumulatorRowQuad& q = quads[lane];
    ASSERT_GE(q.row, 0) << "lane " << lane;
    ASSERT_LT(q.row, kRows) << "lane " << lane;
    ASSERT_TRUE(q.col == 0 || q.col == 4) << "lane " << lane << ": a quad starts 16-byte aligned, col " << q.col;
    for (int c = 0; c < 4; ++c) {
      ++seen[q.row][q.col + c];
      EXPECT_EQ(q.v[c], element_value(q.row, q.col + c)) << "lane " << lane << " element " << c;
    }
  }
  for (int row = 0; row < kRows; ++row)
    for (int col = 0; col < kCols; ++col) EXPECT_EQ(seen[row][col], 1) << "row " << row << " col " << col;
}

TEST(AccumulatorRowQuads, PartnersShareAGroupAndColumns) {
  // A trade happens inside a group of four lanes (one row pair), between lanes that are each
  // other's partners: the partner keeps the other row of the same columns.
  const std::array<AccumulatorRowQuad, kLanes> quads = warp_quads();
  for (int lane = 0; lane < kLanes; ++lane) {
    EXPECT_EQ(row_quad_partner(row_quad_partner(lane)), lane);
    EXPECT_EQ(row_quad_partner(lane) / 4, lane / 4) << "lane " << lane << " trades outside its group";
  }
  for (int lane = 0; lane < kLanes; lane += 2) {
    const AccumulatorRowQuad &even = quads[lane], &odd = quads[lane + 1];
    EXPECT_EQ(even.row, lane / 4);
    EXPECT_EQ(odd.row, lane / 4 + 8);
    EXPECT_EQ(even.col, odd.col);
  }
}

}  // namespace
}  // namespace detail
}  // namespace rfa_cuda
