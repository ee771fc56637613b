// SPDX-License-Identifier: BSD-3-Clause
// sum_in_rank_order: every rank's values added in ring-position order, the same bits on every
// rank, including values whose sum depends on the order of the additions.
#include "comm/host_sums.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "comm/mpi/mpi_communicator.hpp"
#include "comm_test_support.hpp"

namespace rfa::comm {
namespace {

using testing::world_rank;

TEST(HostSums, AddsEveryRanksValuesInRankOrder) {
  MpiCommunicator comm(MPI_COMM_WORLD, world_rank());
  const int P = comm.size(), r = comm.rank();
  // Rank r: (r + 1, -2r, 0.5, signed zero, tiny); sums known exactly.
  const std::vector<double> mine = {double(r + 1), -2.0 * r, 0.5, r % 2 ? -0.0 : 0.0,
                                    std::numeric_limits<double>::denorm_min()};
  const std::vector<double> sum = sum_in_rank_order(comm, mine);
  ASSERT_EQ(sum.size(), mine.size());
  EXPECT_EQ(sum[0], double(P) * (P + 1) / 2);
  EXPECT_EQ(sum[1], -double(P) * (P - 1));
  EXPECT_EQ(sum[2], 0.5 * P);
  EXPECT_EQ(sum[3], 0.0);
  EXPECT_EQ(sum[4], P * std::numeric_limits<double>::denorm_min());
}

// 1e16 + 1 - 1e16 is 0 or 1 depending on the order: ring-position order gives the same bits on
// every rank, and the value of adding rank 0's first.
TEST(HostSums, TheOrderIsRingPositionOrderOnEveryRank) {
  MpiCommunicator comm(MPI_COMM_WORLD, world_rank());
  const int P = comm.size(), r = comm.rank();
  const double values[] = {1e16, 1.0, -1e16, 3.0};
  const std::vector<double> sum = sum_in_rank_order(comm, {values[r % 4]});
  double expected = 0.0;
  for (int k = 0; k < P; ++k) expected += values[k % 4];
  EXPECT_EQ(sum[0], expected);
  double first = sum[0];
  MPI_Bcast(&first, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  EXPECT_EQ(std::memcmp(&first, &sum[0], sizeof first), 0) << "the sum differs between ranks";
}

TEST(HostSums, NothingToSumIsNothing) {
  MpiCommunicator comm(MPI_COMM_WORLD, world_rank());
  EXPECT_TRUE(sum_in_rank_order(comm, {}).empty());
}

}  // namespace
}  // namespace rfa::comm
