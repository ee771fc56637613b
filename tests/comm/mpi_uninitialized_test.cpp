// SPDX-License-Identifier: BSD-3-Clause
// A plain process (no mpiexec, MPI never initialized): creating an MPI communicator must be a
// clear usage error, not a crash, because rfa never initializes MPI itself.
#include <gtest/gtest.h>
#include <mpi.h>

#include "comm/mpi/mpi_communicator.hpp"
#include "comm_test_support.hpp"

namespace rfa::comm {
namespace {

TEST(MpiCommunicatorWithoutMpi, CreationBeforeMpiInitIsAUsageError) {
  int initialized = 1;
  MPI_Initialized(&initialized);
  ASSERT_FALSE(initialized) << "this test must run without MPI_Init";
  const std::string message =
      testing::expect_error(RFA_ERROR_INVALID_USAGE, [] { make_mpi_communicator(MPI_COMM_WORLD, 0); });
  EXPECT_NE(message.find("MPI_Init"), std::string::npos) << message;
}

}  // namespace
}  // namespace rfa::comm
