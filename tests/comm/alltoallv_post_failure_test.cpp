// SPDX-License-Identifier: BSD-3-Clause
// MpiCommunicator::alltoallv when MPI refuses one of its sends (np 3): the failing rank returns
// RFA_ERROR_MPI at once, without waiting for the sends it had posted to a peer that is late,
// and its communicator then reports its transfers abandoned and refuses further use. This
// program defines MPI_Isend itself, in front of MPI's (rfa_core is linked in statically): the
// third send of rank 0's all-to-all fails, after its second, of a block too large for MPI to
// buffer, was posted to rank 1, which arrives seconds later. The peers end by their deadline.
#include <gtest/gtest.h>
#include <mpi.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "comm/mpi/mpi_communicator.hpp"
#include "comm_test_support.hpp"
#include "core/error.hpp"

namespace {
std::atomic<int> sends_before_failure{-1};  // < 0: MPI_Isend is MPI's own
}

extern "C" int MPI_Isend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                         MPI_Request* request) {
  if (sends_before_failure.load() == 0) {
    sends_before_failure = -1;
    return MPI_ERR_OTHER;
  }
  if (sends_before_failure.load() > 0) --sends_before_failure;
  return PMPI_Isend(buf, count, type, dest, tag, comm, request);
}

namespace rfa::comm {
namespace {

using testing::expect_error;
using testing::world_rank;
using testing::world_size;

TEST(AlltoallvPostFailure, TheFailingRankReturnsAtOnceAndAbandonsItsSends) {
  if (world_size() != 3) GTEST_SKIP() << "needs exactly 3 ranks";
  constexpr std::size_t kBytes = std::size_t(8) << 20;  // far past any eager limit
  constexpr double kLateSeconds = 4.0;
  MpiOptions options;
  options.timeout_s = 8.0;
  MpiCommunicator comm(MPI_COMM_WORLD, world_rank(), options);
  const int me = comm.rank();
  const std::vector<std::size_t> bytes(3, kBytes), offsets = {0, kBytes, 2 * kBytes};
  // Kept until MPI is finalized, as rfa keeps what it abandons: transfers left to MPI here
  // (rank 0's sends, every rank's receives that matched before they were given up) may land.
  static std::vector<unsigned char> send, recv;
  send.assign(3 * kBytes, static_cast<unsigned char>(me));
  recv.assign(3 * kBytes, 0xEE);
  const auto all_to_all = [&] {
    comm.alltoallv(send.data(), bytes.data(), offsets.data(), recv.data(), bytes.data(), offsets.data());
  };
  if (me == 0) {
    sends_before_failure = 2;  // the sends to ranks 0 and 1 are posted, that to rank 2 fails
    const auto begun = std::chrono::steady_clock::now();
    const std::string refused = expect_error(RFA_ERROR_MPI, all_to_all);
    EXPECT_NE(refused.find("MPI_Isend (alltoallv)"), std::string::npos) << refused;
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - begun).count();
    // Waiting for the send posted to rank 1 would last until rank 1 arrives, kLateSeconds on.
    EXPECT_LT(took, kLateSeconds / 2) << "the failing rank waited for the sends it had posted";
    EXPECT_TRUE(comm.has_abandoned_transfers());
    const std::string unusable = expect_error(RFA_ERROR_INVALID_USAGE, all_to_all);
    EXPECT_NE(unusable.find("alltoallv failed in MPI_Isend"), std::string::npos) << unusable;
  } else {
    if (me == 1) std::this_thread::sleep_for(std::chrono::duration<double>(kLateSeconds));
    // Rank 0 gave up its receives and never sends to rank 2: the peers end by the deadline
    // (or complete, should every block they wait for have matched in time).
    try {
      all_to_all();
    } catch (const rfa::Error& e) {
      EXPECT_EQ(e.code(), RFA_ERROR_TIMEOUT) << e.what();
    }
  }
  rfa::test::barrier_idle(MPI_COMM_WORLD);  // rank 0, done at once, waits asleep for the peers' deadlines
}

}  // namespace
}  // namespace rfa::comm
