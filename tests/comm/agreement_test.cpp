// SPDX-License-Identifier: BSD-3-Clause
// Collective validation: a problem seen on one rank fails every rank, none hangs.
#include "comm/agreement.hpp"

#include <gtest/gtest.h>

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
