// SPDX-License-Identifier: BSD-3-Clause
// Deadlines of the MPI communicator (src/comm/mpi/deadline.hpp) under mpiexec -n 2..4: a ring
// exchange whose neighbour never starts its side fails with RFA_ERROR_TIMEOUT naming that
// neighbour, within the deadline plus a second, and leaves the communicator refusing work;
// RFA_TIMEOUT_S is read and checked.
#include <gtest/gtest.h>
#include <mpi.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "comm/mpi/deadline.hpp"
#include "comm/mpi/mpi_communicator.hpp"
#include "comm_test_support.hpp"

namespace rfa::comm {
namespace {

using testing::world_rank;
using testing::world_size;

TEST(Deadline, ExchangeWithASilentNeighbourTimesOutNamingIt) {
  if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
  MpiOptions options;
  options.timeout_s = 0.5;
  MpiCommunicator comm(MPI_COMM_WORLD, world_rank(), options);
  const int silent = 1;  // never starts its exchange until the others gave up
  std::vector<char> send(64, char(world_rank())), recv(64);
  if (world_rank() == silent) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  } else {
    const auto start = std::chrono::steady_clock::now();
    Exchange x = comm.start_ring_exchange(send.data(), recv.data(), send.size());
    try {
      x.wait();
      if (comm.prev() == silent) {
        ADD_FAILURE() << "the exchange completed although ring position 1 never sent";
      }
    } catch (const Error& e) {
      const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      EXPECT_EQ(e.code(), RFA_ERROR_TIMEOUT) << e.what();
      EXPECT_LE(waited, 1.5);
      const std::string message = e.what();
      // This rank's receive waits on prev; only the rank after the silent one names it as sender.
      if (comm.prev() == silent) {
        EXPECT_NE(message.find("ring position 1 did not send"), std::string::npos) << message;
      }
      EXPECT_NE(message.find("within 0.5 s"), std::string::npos) << message;
      try {
        comm.barrier();
        ADD_FAILURE() << "a timed-out communicator accepted a barrier";
      } catch (const Error& refused) {
        EXPECT_EQ(refused.code(), RFA_ERROR_INVALID_USAGE) << refused.what();
      }
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);  // the silent rank returns only now: nothing is left waiting
}

TEST(Deadline, EnvironmentVariableIsReadAndChecked) {
  setenv("RFA_TIMEOUT_S", "2.5", 1);
  EXPECT_EQ(mpi::timeout_from_environment(), 2.5);
  setenv("RFA_TIMEOUT_S", "0", 1);
  EXPECT_EQ(mpi::timeout_from_environment(), 0.0);
  setenv("RFA_TIMEOUT_S", "soon", 1);
  EXPECT_THROW(mpi::timeout_from_environment(), Error);
  setenv("RFA_TIMEOUT_S", "-1", 1);
  EXPECT_THROW(mpi::timeout_from_environment(), Error);
  unsetenv("RFA_TIMEOUT_S");
  EXPECT_EQ(mpi::timeout_from_environment(), mpi::kDefaultTimeoutSeconds);
}

}  // namespace
}  // namespace rfa::comm
