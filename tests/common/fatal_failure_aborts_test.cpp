// SPDX-License-Identifier: BSD-3-Clause
// The MPI test main (test_main_mpi.cpp) ends every rank's run at one rank's fatal failure,
// instead of leaving the others waiting in a call that rank has left. This program fails on
// purpose on rank 1 while rank 0 waits for a message rank 1 would send after the assertion.
// CTest passes it when its output says the ranks were aborted (PASS_REGULAR_EXPRESSION); were
// they not, rank 0 would wait until CTest's timeout fails the test.
#include <gtest/gtest.h>
#include <mpi.h>

#include "mpi_test_support.hpp"

namespace rfa {
namespace test {
namespace {

TEST(FatalFailure, OnOneRankAbortsEveryRank) {
  ASSERT_GE(world_size(), 2) << "run with two ranks or more";
  int token = 0;
  if (world_rank() == 1) {
    ASSERT_EQ(token, 1) << "the failure this test makes on purpose";
    MPI_Send(&token, 1, MPI_INT, 0, 0, MPI_COMM_WORLD);
  } else if (world_rank() == 0) {
    MPI_Request request = MPI_REQUEST_NULL;
    MPI_Irecv(&token, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, &request);
    wait_idle(&request);
  }
}

}  // namespace
}  // namespace test
}  // namespace rfa
