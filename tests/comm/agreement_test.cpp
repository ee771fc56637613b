// SPDX-License-Identifier: BSD-3-Clause
// Collective validation: a problem seen on one rank fails every rank, none hangs.
#include "comm/agreement.hpp"

#include <gtest/gtest.h>

#include <new>

#include "comm/mpi/mpi_communicator.hpp"
#include "comm_test_support.hpp"

namespace rfa::comm {
namespace {

using testing::expect_error;
using testing::world_rank;

TEST(Agreement, PassesWhenEveryRankIsFine) {
  MpiCommunicator comm(MPI_COMM_WORLD, world_rank());
  fail_everywhere_unless(comm, true, RFA_ERROR_INVALID_ARGUMENT, "unused");
  require_same_everywhere(comm, {{"a", 5}, {"b", -7}, {"c", INT64_MIN}, {"d", INT64_MAX}});
}

TEST(Agreement, OneFailingRankFailsAll) {
  MpiCommunicator comm(MPI_COMM_WORLD, world_rank());
  const int failing = comm.size() - 1;
  const std::string message = expect_error(RFA_ERROR_INVALID_ARGUMENT, [&] {
    fail_everywhere_unless(comm, comm.rank() != failing, RFA_ERROR_INVALID_ARGUMENT, "the local reason");
  });
  if (comm.rank() == failing) {
    EXPECT_EQ(message, "the local reason");
  } else {
    EXPECT_NE(message.find("lowest failing ring position: " + std::to_string(failing)), std::string::npos) << message;
  }
}

// The ranks that did not fail report the failing rank's code (the lowest one's when several
// fail), not a code of their own: an allocation refused on one rank is an out-of-memory error
// everywhere.
TEST(Agreement, EveryRankReportsTheCodeOfTheLowestFailingRank) {
  MpiCommunicator comm(MPI_COMM_WORLD, world_rank());
  const int P = comm.size(), first = P > 1 ? 1 : 0;
  // Positions >= first fail, each with a code of its own (the lowest's: RFA_ERROR_OUT_OF_MEMORY).
  const rfa_result_t mine = comm.rank() == first ? RFA_ERROR_OUT_OF_MEMORY : RFA_ERROR_TIMEOUT;
  const bool fails_here = comm.rank() >= first;
  const rfa_result_t expected = fails_here ? mine : RFA_ERROR_OUT_OF_MEMORY;
  const std::string message =
      expect_error(expected, [&] { fail_everywhere_unless(comm, !fails_here, mine, "the local reason"); });
  if (fails_here) {
    EXPECT_EQ(message, "the local reason");
  } else {
    EXPECT_NE(message.find("lowest failing ring position: " + std::to_string(first)), std::string::npos) << message;
  }
}

// A check that runs out of host memory (std::bad_alloc, not an rfa::Error) on one rank is agreed
// like any other failure: every rank fails with RFA_ERROR_OUT_OF_MEMORY, none waits.
TEST(Agreement, ACheckOutOfMemoryOnOneRankFailsAll) {
  MpiCommunicator comm(MPI_COMM_WORLD, world_rank());
  const int failing = comm.size() - 1;
  const std::string message = expect_error(RFA_ERROR_OUT_OF_MEMORY, [&] {
    check_everywhere(comm, [&] {
      if (comm.rank() == failing) throw std::bad_alloc();
    });
  });
  if (comm.rank() == failing) {
    EXPECT_NE(message.find("out of host memory"), std::string::npos) << message;
  }
}

TEST(Agreement, DifferingValuesFailEveryRankNamingTheValue) {
  MpiCommunicator comm(MPI_COMM_WORLD, world_rank());
  if (comm.size() < 2) GTEST_SKIP() << "needs two ranks";
  const std::string message = expect_error(RFA_ERROR_INVALID_USAGE, [&] {
    require_same_everywhere(comm, {{"the head dimension", 64}, {"the sequence length", 100 + comm.rank()}});
  });
  EXPECT_NE(message.find("the sequence length differs between ranks (from 100 to " +
                         std::to_string(100 + comm.size() - 1) + ")"),
            std::string::npos)
      << message;
}

}  // namespace
}  // namespace rfa::comm
