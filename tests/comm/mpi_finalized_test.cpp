// SPDX-License-Identifier: BSD-3-Clause
// A plain process that initializes and finalizes MPI itself (an MPI singleton): a communicator
// destroyed after MPI_Finalize must not call MPI, and creating one afterwards is a usage error.
#include <gtest/gtest.h>
#include <mpi.h>

#include "comm/mpi/mpi_communicator.hpp"
#include "comm_test_support.hpp"

namespace rfa::comm {
namespace {

TEST(MpiCommunicatorAfterFinalize, OutlivingMpiIsSafeAndLateCreationIsAUsageError) {
  ASSERT_EQ(MPI_Init(nullptr, nullptr), MPI_SUCCESS);
  auto comm = make_mpi_communicator(MPI_COMM_WORLD, 0);
  EXPECT_EQ(comm->size(), 1);
  int value = 42, received = 0;
  Exchange pending = comm->start_ring_exchange(&value, &received, sizeof value);
  pending.wait();
  EXPECT_EQ(received, 42);
  ASSERT_EQ(MPI_Finalize(), MPI_SUCCESS);
  comm.reset();  // must not call MPI_Comm_free after MPI_Finalize (that would abort)
  const std::string message =
      testing::expect_error(RFA_ERROR_INVALID_USAGE, [] { make_mpi_communicator(MPI_COMM_WORLD, 0); });
  EXPECT_NE(message.find("not finalized"), std::string::npos) << message;
}

}  // namespace
}  // namespace rfa::comm
