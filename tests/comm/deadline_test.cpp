// SPDX-License-Identifier: BSD-3-Clause
// Deadlines of the MPI communicator (src/collective/deadline.hpp) under mpiexec -n 2..4: a ring
// exchange whose neighbour never starts its side fails with RFA_ERROR_TIMEOUT naming that
// neighbour, within the deadline plus a second, and leaves the communicator refusing work;
// exchanges of different calls never match; an exchange dropped unfinished is given up at the
// deadline, or at once once the communicator has timed out; a bounded collective that a rank
// joins late times out on the others and leaves its copies to MPI; RFA_TIMEOUT_S is read and
// checked, and deadline scopes nest.
#include <gtest/gtest.h>
#include <mpi.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "collective/bounded_collectives.hpp"
#include "collective/deadline.hpp"
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
  rfa::test::barrier_idle(MPI_COMM_WORLD);  // the silent rank returns only now: nothing is left waiting
}

// Exchanges of two different calls never match, even with equal sizes and equal positions in
// their calls: rank 0 is in call 1 while the others are in call 2, and every rank times out
// instead of receiving the other call's block.
TEST(Deadline, ExchangesOfDifferentCallsNeverMatch) {
  if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
  MpiOptions options;
  options.timeout_s = 0.5;
  MpiCommunicator comm(MPI_COMM_WORLD, world_rank(), options);
  comm.begin_call({7, 1, world_rank() == 0 ? 1 : 2, nullptr});
  std::vector<char> send(64, char(world_rank())), recv(64, char(-1));
  Exchange x = comm.start_ring_exchange(send.data(), recv.data(), send.size());
  // A small send completes on its own (eagerly); the receive completes only from a neighbour
  // in the same call.
  const bool other_call = (comm.rank() == 0) != (comm.prev() == 0);
  try {
    x.wait();
    EXPECT_FALSE(other_call) << "a block of a neighbour in another call was received";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), RFA_ERROR_TIMEOUT) << e.what();
    EXPECT_TRUE(other_call) << e.what();
  }
  if (comm.prev() == 0) {
    EXPECT_EQ(recv[0], char(-1)) << "a block of another call landed";
  }
  rfa::test::barrier_idle(MPI_COMM_WORLD);
}

// The same call on every rank: the tags agree and the exchange completes.
TEST(Deadline, ExchangesOfTheSameCallMatch) {
  MpiCommunicator comm(MPI_COMM_WORLD, world_rank());
  for (std::int64_t call = 1; call <= 3; ++call) {
    comm.begin_call({7, 1, call, nullptr});
    std::vector<char> send(64, char(world_rank())), recv(64, char(-1));
    comm.start_ring_exchange(send.data(), recv.data(), send.size()).wait();
    EXPECT_EQ(recv[0], char(comm.prev()));
  }
}

// An exchange whose handle is dropped unfinished (an error unwinding a call) is given up at the
// deadline instead of being waited for forever, and leaves the communicator refusing work.
TEST(Deadline, AnAbandonedExchangeIsGivenUpAtTheDeadline) {
  if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
  MpiOptions options;
  options.timeout_s = 0.5;
  MpiCommunicator comm(MPI_COMM_WORLD, world_rank(), options);
  std::vector<char> send(1 << 20, 1), recv(1 << 20);  // beyond the eager limit: needs the peer
  if (world_rank() != 1) {
    const auto start = std::chrono::steady_clock::now();
    { Exchange dropped = comm.start_ring_exchange(send.data(), recv.data(), send.size()); }
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (comm.prev() == 1 || comm.next() == 1) {
      EXPECT_GE(waited, 0.4);
      EXPECT_LE(waited, 1.5);
      EXPECT_THROW(comm.barrier(), Error) << "a communicator that gave an exchange up accepted a barrier";
    }
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(world_rank() == 1 ? 1500 : 0));
  rfa::test::barrier_idle(MPI_COMM_WORLD);
}

// Once a wait has timed out, the other exchanges a call had in flight are given up at once: the
// call returns within one deadline however many it had (a backward keeps two per step).
TEST(Deadline, ExchangesInFlightAfterATimeoutAreGivenUpAtOnce) {
  if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
  MpiOptions options;
  options.timeout_s = 0.5;
  MpiCommunicator comm(MPI_COMM_WORLD, world_rank(), options);
  const int silent = 1;
  std::vector<char> send(1 << 20, 1), recv_a(1 << 20), recv_b(1 << 20), recv_c(1 << 20);
  if (world_rank() != silent && (comm.prev() == silent || comm.next() == silent)) {
    const auto start = std::chrono::steady_clock::now();
    {
      Exchange a = comm.start_ring_exchange(send.data(), recv_a.data(), send.size());
      Exchange b = comm.start_ring_exchange(send.data(), recv_b.data(), send.size());
      Exchange c = comm.start_ring_exchange(send.data(), recv_c.data(), send.size());
      EXPECT_THROW(a.wait(), Error);
    }  // b and c dropped unfinished, as an error unwinding a call drops them
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_GE(waited, 0.4);
    EXPECT_LE(waited, 0.9) << "the exchanges in flight were each given a deadline of their own";
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(world_rank() == silent ? 1500 : 0));
  rfa::test::barrier_idle(MPI_COMM_WORLD);
}

// A bounded collective (creation's agreement runs on them) that one rank joins only after the
// others gave up fails on those with RFA_ERROR_TIMEOUT within their scope's deadline, naming what
// it was for, and leaves the caller's values as they were. The copies MPI works on are left to
// it, counted and never freed: the late rank still starts the collective, and MPI may complete
// it into them while the others poll (a freed copy is a write into freed memory, which the
// sanitizer pass would report).
TEST(Deadline, ABoundedCollectiveJoinedLateTimesOutAndLeavesItsCopiesToMpi) {
  if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
  MPI_Comm comm = MPI_COMM_NULL;  // of its own, and never freed: its collective may stay pending
  ASSERT_EQ(MPI_Comm_dup(MPI_COMM_WORLD, &comm), MPI_SUCCESS);
  const int late = world_size() - 1;
  std::vector<std::int64_t> values(16, world_rank() + 1);
  const std::vector<std::int64_t> original = values;
  const collective::DeadlineScope scope(0.3);
  if (world_rank() == late) {
    std::this_thread::sleep_for(std::chrono::milliseconds(800));
    try {
      collective::allreduce_within(comm, values.data(), 16, MPI_INT64_T, MPI_SUM, "the late sum");
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), RFA_ERROR_TIMEOUT) << e.what();  // the others may not progress it in time
    }
  } else {
    const std::size_t before = collective::abandoned_collective_bytes();
    const auto start = std::chrono::steady_clock::now();
    try {
      collective::allreduce_within(comm, values.data(), 16, MPI_INT64_T, MPI_SUM, "the late sum");
      ADD_FAILURE() << "the sum completed although the last rank had not joined";
    } catch (const Error& e) {
      const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      EXPECT_EQ(e.code(), RFA_ERROR_TIMEOUT) << e.what();
      EXPECT_NE(std::string(e.what()).find("the late sum did not complete within 0.3 s"), std::string::npos)
          << e.what();
      EXPECT_GE(waited, 0.25);
      EXPECT_LE(waited, 1.3);
    }
    EXPECT_EQ(values, original) << "a timed-out collective changed the caller's values";
    EXPECT_GE(collective::abandoned_collective_bytes() - before, values.size() * sizeof(std::int64_t))
        << "the timed-out sum's copy was not left to MPI";
  }
  rfa::test::barrier_idle(MPI_COMM_WORLD);
}

// A scope's deadline governs the bounded collectives on its thread while it lives, an inner
// scope's for its own life only; outside every scope, RFA_TIMEOUT_S's, or the default where it is
// unset or malformed (the malformed value is reported where a context reads it).
TEST(Deadline, ScopesNestAndRestoreTheDeadlineAround) {
  setenv("RFA_TIMEOUT_S", "7", 1);
  EXPECT_EQ(collective::current_timeout(), 7.0);
  {
    const collective::DeadlineScope outer(5.0);
    EXPECT_EQ(collective::current_timeout(), 5.0);
    {
      const collective::DeadlineScope inner(0.0);
      EXPECT_EQ(collective::current_timeout(), 0.0);
    }
    EXPECT_EQ(collective::current_timeout(), 5.0) << "an inner scope's end dropped the outer scope's deadline";
  }
  EXPECT_EQ(collective::current_timeout(), 7.0) << "a scope's end did not restore the environment's deadline";
  setenv("RFA_TIMEOUT_S", "soon", 1);
  EXPECT_EQ(collective::current_timeout(), collective::kDefaultTimeoutSeconds);
  unsetenv("RFA_TIMEOUT_S");
  EXPECT_EQ(collective::current_timeout(), collective::kDefaultTimeoutSeconds);
}

TEST(Deadline, EnvironmentVariableIsReadAndChecked) {
  setenv("RFA_TIMEOUT_S", "2.5", 1);
  EXPECT_EQ(collective::timeout_from_environment(), 2.5);
  setenv("RFA_TIMEOUT_S", "0", 1);
  EXPECT_EQ(collective::timeout_from_environment(), 0.0);
  setenv("RFA_TIMEOUT_S", "soon", 1);
  EXPECT_THROW(collective::timeout_from_environment(), Error);
  setenv("RFA_TIMEOUT_S", "-1", 1);
  EXPECT_THROW(collective::timeout_from_environment(), Error);
  for (const char* trailing : {"30s", "1,5", "10 "}) {  // a number then more: refused, not read as the number
    setenv("RFA_TIMEOUT_S", trailing, 1);
    EXPECT_THROW(collective::timeout_from_environment(), Error) << trailing;
  }
  setenv("RFA_TIMEOUT_S", "2e9", 1);  // beyond 1e9 s
  EXPECT_THROW(collective::timeout_from_environment(), Error);
  setenv("RFA_TIMEOUT_S", "1e-400", 1);  // below a double's range: it would read as 0, no deadline
  EXPECT_THROW(collective::timeout_from_environment(), Error);
  setenv("RFA_TIMEOUT_S", "1e-300", 1);  // tiny but a double: taken as it is
  EXPECT_EQ(collective::timeout_from_environment(), 1e-300);
  unsetenv("RFA_TIMEOUT_S");
  EXPECT_EQ(collective::timeout_from_environment(), collective::kDefaultTimeoutSeconds);
}

}  // namespace
}  // namespace rfa::comm
