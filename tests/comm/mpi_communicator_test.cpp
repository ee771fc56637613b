// SPDX-License-Identifier: BSD-3-Clause
// The MPI ring communicator under mpiexec -n 1..4: creation and ring positions, ring
// exchanges (several in flight, large, through the derived datatype), collectives, and the
// translation of MPI failures into rfa::Error.
#include "comm/mpi/mpi_communicator.hpp"

#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <numeric>

#include "collective/mpi_error.hpp"
#include "comm_test_support.hpp"

namespace rfa::comm {
namespace {

using testing::expect_error;
using testing::first_mismatch;
using testing::pattern;
using testing::world_rank;
using testing::world_size;

// ---------------------------------------------------------------- creation and positions

TEST(MpiCommunicator, IdentityPositionsKeepWorldRanks) {
  MpiCommunicator comm(MPI_COMM_WORLD, world_rank());
  EXPECT_EQ(comm.rank(), world_rank());
  EXPECT_EQ(comm.size(), world_size());
  EXPECT_EQ(comm.next(), (world_rank() + 1) % world_size());
  EXPECT_EQ(comm.prev(), (world_rank() + world_size() - 1) % world_size());
  EXPECT_STREQ(comm.backend_name(), "mpi");
  EXPECT_TRUE(comm.accepts(MemoryKind::host));
  EXPECT_FALSE(comm.accepts(MemoryKind::device));
  EXPECT_GE(comm.tag_upper_bound(), 32767);
}

TEST(MpiCommunicator, ReversedPositionsBecomeRanks) {
  const int position = world_size() - 1 - world_rank();
  MpiCommunicator comm(MPI_COMM_WORLD, position);
  EXPECT_EQ(comm.rank(), position);
  int mpi_rank = -1;
  MPI_Comm_rank(comm.mpi_comm(), &mpi_rank);
  EXPECT_EQ(mpi_rank, position);
  // The ring follows positions: the rank that sends to us is position - 1, i.e. world rank + 1.
  int from_prev = -1;
  const int mine = world_rank();
  Exchange x = comm.start_ring_exchange(&mine, &from_prev, sizeof(int));
  x.wait();
  EXPECT_EQ(from_prev, (world_rank() + 1) % world_size());
}

TEST(MpiCommunicator, FactoryReturnsTheMpiCommunicator) {
  std::unique_ptr<Communicator> comm = make_mpi_communicator(MPI_COMM_WORLD, world_rank());
  ASSERT_NE(dynamic_cast<MpiCommunicator*>(comm.get()), nullptr);
  EXPECT_EQ(comm->rank(), world_rank());
}

TEST(MpiCommunicator, DuplicatePositionsFailOnEveryRank) {
  // Everyone claims position 0 (with P = 1 that is valid, so claim 1 there instead).
  const int position = world_size() == 1 ? 1 : 0;
  const std::string message =
      expect_error(RFA_ERROR_INVALID_USAGE, [&] { MpiCommunicator c(MPI_COMM_WORLD, position); });
  EXPECT_NE(message.find("permutation"), std::string::npos) << message;
}

TEST(MpiCommunicator, OutOfRangePositionOnOneRankFailsOnEveryRank) {
  const int last = world_size() - 1;
  // The last rank asks for position P; the others are fine, and must still fail, not hang.
  const int position = world_rank() == last ? world_size() : world_rank();
  const std::string message =
      expect_error(RFA_ERROR_INVALID_USAGE, [&] { MpiCommunicator c(MPI_COMM_WORLD, position); });
  EXPECT_NE(message.find("rank " + std::to_string(last) + " gave position " + std::to_string(world_size())),
            std::string::npos)
      << message;
}

TEST(MpiCommunicator, RestoresTheParentsErrorHandler) {
  MPI_Errhandler before, after;
  MPI_Comm_get_errhandler(MPI_COMM_WORLD, &before);
  { MpiCommunicator comm(MPI_COMM_WORLD, world_rank()); }
  expect_error(RFA_ERROR_INVALID_USAGE, [&] { MpiCommunicator c(MPI_COMM_WORLD, -1); });
  MPI_Comm_get_errhandler(MPI_COMM_WORLD, &after);
  EXPECT_EQ(before, after);
  MPI_Errhandler_free(&before);
  MPI_Errhandler_free(&after);
}

TEST(MpiCommunicator, NullParentIsAnInvalidArgument) {
  expect_error(RFA_ERROR_INVALID_ARGUMENT, [] { MpiCommunicator c(MPI_COMM_NULL, 0); });
}

// ---------------------------------------------------------------- ring exchange

TEST(MpiCommunicator, RingExchangeDeliversPrevsData) {
  MpiCommunicator comm(MPI_COMM_WORLD, world_rank());
  const std::size_t bytes = 1000;
  const auto send = pattern(comm.rank(), 0, bytes);
  std::vector<unsigned char> recv(bytes, 0);
  Exchange x = comm.start_ring_exchange(send.data(), recv.data(), bytes);
  while (!x.test()) {
  }
  EXPECT_TRUE(x.done());
  EXPECT_EQ(first_mismatch(recv.data(), comm.prev(), 0, bytes), bytes);
}

// Every shift from 1 to P, in flight together and completed in reverse: hops h delivers the
// data of the rank h positions behind (P positions: the rank itself); fewer than 1 is refused.
TEST(MpiCommunicator, ShiftExchangeDeliversTheDataOfTheRankThatManyHopsBehind) {
  MpiCommunicator comm(MPI_COMM_WORLD, world_rank());
  const int P = comm.size();
  const std::size_t bytes = 777;
  std::vector<std::vector<unsigned char>> send, recv;
  std::vector<Exchange> inflight;
  for (int h = 1; h <= P; ++h) {
    send.push_back(pattern(comm.rank(), h, bytes));
    recv.emplace_back(bytes, 0);
  }
  for (int h = 1; h <= P; ++h)
    inflight.push_back(
        comm.start_shift_exchange(send[std::size_t(h - 1)].data(), recv[std::size_t(h - 1)].data(), bytes, h));
  for (int h = P; h >= 1; --h) inflight[std::size_t(h - 1)].wait();
  for (int h = 1; h <= P; ++h) {
    const int from = (comm.rank() - h % P + P) % P;
    EXPECT_EQ(comm.behind(h), from);
    EXPECT_EQ(comm.ahead(h), (comm.rank() + h) % P);
    EXPECT_EQ(first_mismatch(recv[std::size_t(h - 1)].data(), from, h, bytes), bytes) << "hops " << h;
  }
  std::vector<unsigned char> a(8), b(8);
  expect_error(RFA_ERROR_INVALID_ARGUMENT, [&] { comm.start_shift_exchange(a.data(), b.data(), 8, 0); });
}

// Sizes of their own each way (the needed-only exchange's rounds): rank r sends 100 * r + 3 bytes
// h hops ahead, or none from odd ranks at odd h; several in flight; a call that moves nothing
// on this rank still takes its tag, so the exchange after it matches on every rank.
TEST(MpiCommunicator, UnevenShiftExchangeDeliversEachRanksOwnSize) {
  MpiCommunicator comm(MPI_COMM_WORLD, world_rank());
  const int P = comm.size(), me = comm.rank();
  auto size_of = [&](int rank, int h) {
    return rank % 2 == 1 && h % 2 == 1 ? std::size_t(0) : std::size_t(100 * rank + 3);
  };
  std::vector<std::vector<unsigned char>> send, recv;
  std::vector<Exchange> inflight;
  for (int h = 1; h <= P; ++h) {
    send.push_back(pattern(me, h, size_of(me, h)));
    recv.emplace_back(size_of(comm.behind(h), h) + 1, 0xEE);  // one byte past the end stays untouched
  }
  for (int h = 1; h <= P; ++h)
    inflight.push_back(comm.start_uneven_shift_exchange(send[std::size_t(h - 1)].data(), size_of(me, h),
                                                        recv[std::size_t(h - 1)].data(), size_of(comm.behind(h), h),
                                                        h));
  for (int h = P; h >= 1; --h) inflight[std::size_t(h - 1)].wait();
  for (int h = 1; h <= P; ++h) {
    const std::size_t n = size_of(comm.behind(h), h);
    EXPECT_EQ(first_mismatch(recv[std::size_t(h - 1)].data(), comm.behind(h), h, n), n) << "hops " << h;
    EXPECT_EQ(recv[std::size_t(h - 1)][n], 0xEE) << "hops " << h;
  }
  // Only rank 0 sends (to 1); the others move nothing: then an even exchange still matches.
  std::vector<unsigned char> one(1, static_cast<unsigned char>(me)), got(1, 0xEE);
  Exchange x = comm.start_uneven_shift_exchange(one.data(), me == 0 && P > 1 ? 1 : 0, got.data(), me == 1 ? 1 : 0, 1);
  x.wait();
  EXPECT_EQ(got[0], P > 1 && me == 1 ? 0 : 0xEE);
  std::vector<unsigned char> a = pattern(me, 9, 64), b(64, 0);
  comm.start_ring_exchange(a.data(), b.data(), 64).wait();
  EXPECT_EQ(first_mismatch(b.data(), comm.prev(), 9, 64), 64u);
  expect_error(RFA_ERROR_INVALID_ARGUMENT, [&] { comm.start_uneven_shift_exchange(a.data(), 8, b.data(), 8, 0); });
}

TEST(MpiCommunicator, ZeroBytesIsAlreadyDone) {
  MpiCommunicator comm(MPI_COMM_WORLD, world_rank());
  Exchange x = comm.start_ring_exchange(nullptr, nullptr, 0);
  EXPECT_TRUE(x.done());
  EXPECT_TRUE(x.test());
}

TEST(MpiCommunicator, OverlappingBuffersAreRejected) {
  MpiCommunicator comm(MPI_COMM_WORLD, world_rank());
  std::vector<unsigned char> buffer(100);
  expect_error(RFA_ERROR_INVALID_ARGUMENT, [&] { comm.start_ring_exchange(buffer.data(), buffer.data() + 10, 50); });
  expect_error(RFA_ERROR_INVALID_ARGUMENT, [&] { comm.start_ring_exchange(nullptr, buffer.data(), 50); });
}

// Four exchanges in flight at once, as the backward engine has them (K, V, dK, dV), of equal
// and of different sizes, completed in an order other than the one they were started in.
TEST(MpiCommunicator, OutstandingExchangesDoNotCross) {
  MpiCommunicator comm(MPI_COMM_WORLD, world_rank());
  for (bool equal_sizes : {true, false}) {
    const std::size_t sizes[4] = {4096, equal_sizes ? 4096u : 300000u, 4096, equal_sizes ? 4096u : 17u};
    std::vector<std::vector<unsigned char>> send, recv;
    for (int s = 0; s < 4; ++s) {
      send.push_back(pattern(comm.rank(), s, sizes[s]));
      recv.emplace_back(sizes[s], 0);
    }
    std::vector<Exchange> inflight;
    for (int s = 0; s < 4; ++s) inflight.push_back(comm.start_ring_exchange(send[s].data(), recv[s].data(), sizes[s]));
    inflight[3].wait();
    while (!inflight[1].test()) {
    }
    inflight[0].wait();
    inflight[2].wait();
    for (int s = 0; s < 4; ++s) {
      EXPECT_EQ(first_mismatch(recv[s].data(), comm.prev(), s, sizes[s]), sizes[s])
          << "exchange " << s << (equal_sizes ? " (equal sizes)" : " (different sizes)");
    }
  }
}

// Double buffering over a whole ring: after P-1 steps every block has visited every rank.
TEST(MpiCommunicator, DoubleBufferedRingVisitsEveryRank) {
  MpiCommunicator comm(MPI_COMM_WORLD, world_rank());
  const std::size_t bytes = 200000;  // above the eager limit: rendezvous transfers
  std::vector<unsigned char> buffers[2] = {pattern(comm.rank(), 7, bytes), std::vector<unsigned char>(bytes)};
  for (int step = 1; step < comm.size(); ++step) {
    Exchange x = comm.start_ring_exchange(buffers[(step - 1) % 2].data(), buffers[step % 2].data(), bytes);
    x.wait();
    const int origin = (comm.rank() - step + comm.size()) % comm.size();
    ASSERT_EQ(first_mismatch(buffers[step % 2].data(), origin, 7, bytes), bytes) << "step " << step;
  }
}

TEST(MpiCommunicator, LargeishExchangeCompletesByPolling) {
  MpiCommunicator comm(MPI_COMM_WORLD, world_rank());
  const std::size_t bytes = std::size_t(48) << 20;
  const auto send = pattern(comm.rank(), 3, bytes);
  std::vector<unsigned char> recv(bytes, 0);
  Exchange x = comm.start_ring_exchange(send.data(), recv.data(), bytes);
  while (!x.test()) {
  }
  EXPECT_EQ(first_mismatch(recv.data(), comm.prev(), 3, bytes), bytes);
}

// The handle's destructor completes an exchange nobody waited for, so the data arrives.
TEST(MpiCommunicator, DestroyingAHandleCompletesTheExchange) {
  MpiCommunicator comm(MPI_COMM_WORLD, world_rank());
  const std::size_t bytes = 300000;
  const auto send = pattern(comm.rank(), 1, bytes);
  std::vector<unsigned char> recv(bytes, 0), recv2(bytes, 0);
  { Exchange forgotten = comm.start_ring_exchange(send.data(), recv.data(), bytes); }
  EXPECT_EQ(first_mismatch(recv.data(), comm.prev(), 1, bytes), bytes);
  // Move assignment completes the exchange being replaced.
  Exchange x = comm.start_ring_exchange(send.data(), recv2.data(), bytes);
  x = Exchange();
  EXPECT_TRUE(x.done());
  EXPECT_EQ(first_mismatch(recv2.data(), comm.prev(), 1, bytes), bytes);
}

// ---------------------------------------------------------------- messages beyond INT_MAX

// The derived-datatype path, exercised with a lowered threshold so buffers stay small.
TEST(MpiCommunicator, DerivedDatatypePathMovesExactBytes) {
  MpiOptions options;
  options.max_count_per_call = 1000;
  MpiCommunicator comm(MPI_COMM_WORLD, world_rank(), options);
  const int p = comm.size();

  const std::size_t exchange_bytes = 12345;  // 12 blocks of 1000 and a remainder
  const auto send = pattern(comm.rank(), 0, exchange_bytes);
  std::vector<unsigned char> recv(exchange_bytes + 1, 0xEE);  // one guard byte past the end
  comm.start_ring_exchange(send.data(), recv.data(), exchange_bytes).wait();
  EXPECT_EQ(first_mismatch(recv.data(), comm.prev(), 0, exchange_bytes), exchange_bytes);
  EXPECT_EQ(recv[exchange_bytes], 0xEE);

  const std::size_t block = 5001;  // not a multiple of 1000: the resized extent matters
  std::vector<unsigned char> gathered(block * p, 0);
  comm.allgather(pattern(comm.rank(), 1, block).data(), gathered.data(), block);
  for (int r = 0; r < p; ++r) EXPECT_EQ(first_mismatch(&gathered[block * r], r, 1, block), block) << "from " << r;

  std::vector<unsigned char> to_all(block * p), from_all(block * p, 0);
  for (int r = 0; r < p; ++r) std::memcpy(&to_all[block * r], pattern(comm.rank(), 10 + r, block).data(), block);
  comm.alltoall(to_all.data(), from_all.data(), block);
  for (int r = 0; r < p; ++r) {
    EXPECT_EQ(first_mismatch(&from_all[block * r], r, 10 + comm.rank(), block), block) << "from " << r;
  }

  std::vector<unsigned char> shared =
      comm.rank() == p - 1 ? pattern(p - 1, 2, 2500) : std::vector<unsigned char>(2500, 0);
  comm.broadcast(shared.data(), shared.size(), p - 1);
  EXPECT_EQ(first_mismatch(shared.data(), p - 1, 2, 2500), std::size_t(2500));
}

// A real message above INT_MAX bytes needs ~4.3 GB per rank: run it on demand only
// (RFA_TEST_HUGE_MESSAGES=1).
TEST(MpiCommunicator, ExchangeAboveIntMaxBytes) {
  const char* flag = std::getenv("RFA_TEST_HUGE_MESSAGES");
  if (flag == nullptr || std::string(flag) != "1") GTEST_SKIP() << "set RFA_TEST_HUGE_MESSAGES=1 to run";
  MpiCommunicator comm(MPI_COMM_WORLD, world_rank());
  const std::size_t bytes = (std::size_t(1) << 31) + 4097;
  const auto send = pattern(comm.rank(), 5, bytes);
  std::vector<unsigned char> recv(bytes, 0);
  comm.start_ring_exchange(send.data(), recv.data(), bytes).wait();
  EXPECT_EQ(first_mismatch(recv.data(), comm.prev(), 5, bytes), bytes);
}

// ---------------------------------------------------------------- collectives

TEST(MpiCommunicator, AllgatherPlacesEachRanksBlock) {
  MpiCommunicator comm(MPI_COMM_WORLD, world_size() - 1 - world_rank());
  const std::size_t block = 777;
  std::vector<unsigned char> gathered(block * comm.size(), 0);
  comm.allgather(pattern(comm.rank(), 4, block).data(), gathered.data(), block);
  for (int r = 0; r < comm.size(); ++r) {
    EXPECT_EQ(first_mismatch(&gathered[block * r], r, 4, block), block) << "block of ring position " << r;
  }
}

TEST(MpiCommunicator, AlltoallDeliversEachPairsBlock) {
  MpiCommunicator comm(MPI_COMM_WORLD, world_rank());
  const int p = comm.size();
  const std::size_t block = 333;
  std::vector<unsigned char> to_all(block * p), from_all(block * p, 0);
  for (int r = 0; r < p; ++r) std::memcpy(&to_all[block * r], pattern(comm.rank(), 20 + r, block).data(), block);
  comm.alltoall(to_all.data(), from_all.data(), block);
  for (int r = 0; r < p; ++r) {
    EXPECT_EQ(first_mismatch(&from_all[block * r], r, 20 + comm.rank(), block), block) << "from " << r;
  }
}

// Sizes differ per pair (sender s sends 100 + 7s + 3r bytes to r, some zero), blocks are
// placed at scattered offsets with gaps, and one ring exchange stays in flight throughout: the
// all-to-all's messages must neither mix with it nor with each other.
TEST(MpiCommunicator, AlltoallvDeliversIrregularBlocks) {
  MpiOptions options;
  options.max_count_per_call = 64;  // the larger blocks take the derived-datatype path
  MpiCommunicator comm(MPI_COMM_WORLD, world_rank(), options);
  const int p = comm.size(), me = comm.rank();
  auto pair_bytes = [](int from, int to) -> std::size_t { return (from + to) % 3 == 2 ? 0 : 100 + 7 * from + 3 * to; };
  std::vector<std::size_t> send_bytes(p), send_offsets(p), recv_bytes(p), recv_offsets(p);
  std::size_t send_total = 0, recv_total = 0;
  for (int r = 0; r < p; ++r) {
    send_offsets[r] = send_total + 5;  // a gap before every block
    send_bytes[r] = pair_bytes(me, r);
    send_total = send_offsets[r] + send_bytes[r];
    recv_offsets[r] = recv_total + 11;
    recv_bytes[r] = pair_bytes(r, me);
    recv_total = recv_offsets[r] + recv_bytes[r];
  }
  std::vector<unsigned char> send(send_total, 0), recv(recv_total, 0xEE);
  for (int r = 0; r < p; ++r) {
    const auto block = pattern(me, 30 + r, send_bytes[r]);
    std::copy(block.begin(), block.end(), send.begin() + std::ptrdiff_t(send_offsets[r]));
  }
  const auto ring_send = pattern(me, 7, 4000);
  std::vector<unsigned char> ring_recv(4000, 0);
  Exchange in_flight = comm.start_ring_exchange(ring_send.data(), ring_recv.data(), ring_send.size());
  comm.alltoallv(send.data(), send_bytes.data(), send_offsets.data(), recv.data(), recv_bytes.data(),
                 recv_offsets.data());
  in_flight.wait();
  EXPECT_EQ(first_mismatch(ring_recv.data(), comm.prev(), 7, 4000), std::size_t(4000));
  for (int r = 0; r < p; ++r) {
    EXPECT_EQ(first_mismatch(&recv[recv_offsets[r]], r, 30 + me, recv_bytes[r]), recv_bytes[r]) << "from " << r;
    EXPECT_EQ(recv[recv_offsets[r] - 1], 0xEE) << "the gap before rank " << r << "'s block was written";
  }
}

TEST(MpiCommunicator, ReduceScatterSumsFloatsIntoEachRanksBlock) {
  MpiCommunicator comm(MPI_COMM_WORLD, world_size() - 1 - world_rank());
  const int p = comm.size(), me = comm.rank();
  const std::size_t count = 1001;
  std::vector<float> send(count * p);
  for (int r = 0; r < p; ++r)
    for (std::size_t i = 0; i < count; ++i) send[r * count + i] = float(me + 1) * 0.5f + float(r) * 1000.0f + float(i);
  std::vector<float> recv(count, -1.0f);
  comm.reduce_scatter_sum(send.data(), recv.data(), count);
  const float ranks_part = 0.5f * float(p * (p + 1) / 2);
  for (std::size_t i = 0; i < count; ++i) {
    ASSERT_EQ(recv[i], ranks_part + float(p) * (float(me) * 1000.0f + float(i))) << "value " << i;
  }
}

// The ring reduce-scatter at block sizes of one value, a few and many, through the
// derived-datatype path too (a small max_count_per_call: 64 bytes, 16 floats, so blocks of 15,
// 16 and 17 values sit on its edge), and the same bits on a repeat (the send buffer is scratch:
// each call gets a fresh copy).
TEST(MpiCommunicator, ReduceScatterSumsEveryBlockSizeAndRepeatsBitwise) {
  MpiOptions small;
  small.max_count_per_call = 64;
  for (const MpiOptions& options : {MpiOptions(), small}) {
    MpiCommunicator comm(MPI_COMM_WORLD, (world_rank() + 1) % world_size(), options);
    const int p = comm.size(), me = comm.rank();
    for (std::size_t count : {1, 3, 15, 16, 17, 4099}) {
      std::vector<float> send(count * std::size_t(p));
      for (int r = 0; r < p; ++r)
        for (std::size_t i = 0; i < count; ++i) send[r * count + i] = float(me * 7 + 1) * 0.25f + float(r * 10000 + i);
      std::vector<float> recv(count, -1.0f);
      comm.reduce_scatter_sum(send.data(), recv.data(), count);
      for (std::size_t i = 0; i < count; ++i) {
        const float expected = 0.25f * float(7 * p * (p - 1) / 2 + p) + float(p) * float(me * 10000 + std::int64_t(i));
        ASSERT_EQ(recv[i], expected) << "count " << count << " value " << i;
      }
      // Values whose sum rounds: a repeat gives the same bits.
      for (std::size_t i = 0; i < send.size(); ++i) send[i] = 1.0f / float(3 + me + int(i % count % 17));
      std::vector<float> first(count), again(count), scratch = send;
      comm.reduce_scatter_sum(scratch.data(), first.data(), count);
      scratch = send;
      comm.reduce_scatter_sum(scratch.data(), again.data(), count);
      ASSERT_EQ(std::memcmp(first.data(), again.data(), count * sizeof(float)), 0) << "count " << count;
      double exact = 0;
      for (int r = 0; r < p; ++r) exact += 1.0 / double(3 + r);
      EXPECT_NEAR(first[0], exact, 1e-6 * p);
    }
  }
}

TEST(MpiCommunicator, AllreduceMinMaxSum) {
  MpiCommunicator comm(MPI_COMM_WORLD, world_rank());
  const std::int64_t p = comm.size();
  const std::int64_t big = std::int64_t(1) << 40;  // beyond int: the values are really 64-bit
  const std::int64_t mine = big + comm.rank();
  EXPECT_EQ(comm.allreduce(mine, ReduceOp::min), big);
  EXPECT_EQ(comm.allreduce(mine, ReduceOp::max), big + p - 1);
  EXPECT_EQ(comm.allreduce(mine, ReduceOp::sum), p * big + p * (p - 1) / 2);
  std::int64_t values[3] = {-comm.rank(), comm.rank() * 10, 1};
  comm.allreduce_inplace(values, 3, ReduceOp::sum);
  EXPECT_EQ(values[0], -p * (p - 1) / 2);
  EXPECT_EQ(values[1], 10 * p * (p - 1) / 2);
  EXPECT_EQ(values[2], p);
}

TEST(MpiCommunicator, BroadcastFromEveryRoot) {
  MpiCommunicator comm(MPI_COMM_WORLD, world_rank());
  for (int root = 0; root < comm.size(); ++root) {
    std::vector<unsigned char> data = comm.rank() == root ? pattern(root, 6, 999) : std::vector<unsigned char>(999, 0);
    comm.broadcast(data.data(), data.size(), root);
    EXPECT_EQ(first_mismatch(data.data(), root, 6, 999), std::size_t(999)) << "root " << root;
  }
  comm.barrier();
  expect_error(RFA_ERROR_INVALID_ARGUMENT, [&] { comm.broadcast(nullptr, 0, comm.size()); });
}

// ---------------------------------------------------------------- MPI errors

TEST(MpiCommunicator, RingCommunicatorReturnsErrorsAndTheyBecomeRfaErrors) {
  MpiCommunicator comm(MPI_COMM_WORLD, world_rank());
  // A negative count: with MPI_ERRORS_RETURN on the ring communicator this returns instead of
  // aborting the job (if the handler were fatal, this test would kill mpiexec).
  char byte = 0;
  const int rc = MPI_Send(&byte, -1, MPI_BYTE, comm.next(), 0, comm.mpi_comm());
  ASSERT_NE(rc, MPI_SUCCESS);
  const std::string message = expect_error(RFA_ERROR_MPI, [&] { collective::check_mpi(rc, "MPI_Send"); });
  EXPECT_NE(message.find("MPI_Send failed"), std::string::npos) << message;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(rc, text, &length);
  EXPECT_NE(message.find(std::string(text, std::size_t(length))), std::string::npos) << message;
}

// Ranks that disagree on an exchange's size: the receiver of the larger message gets MPI's
// truncation error as RFA_ERROR_MPI, the receiver of the smaller one a usage error.
TEST(MpiCommunicator, MismatchedExchangeSizesAreReported) {
  MpiCommunicator comm(MPI_COMM_WORLD, world_rank());
  if (comm.size() < 2) GTEST_SKIP() << "needs two ranks";
  const std::size_t bytes = comm.rank() == 0 ? 128 : 64;  // small: eager sends complete locally
  std::vector<unsigned char> send(bytes, 1), recv(bytes, 0);
  Exchange x = comm.start_ring_exchange(send.data(), recv.data(), bytes);
  if (comm.rank() == 1) {
    const std::string message = expect_error(RFA_ERROR_MPI, [&] { x.wait(); });
    EXPECT_NE(message.find("MPI_Waitall"), std::string::npos) << message;
  } else if (comm.rank() == 0) {
    const std::string message = expect_error(RFA_ERROR_INVALID_USAGE, [&] { x.wait(); });
    EXPECT_NE(message.find("expected 128 bytes"), std::string::npos) << message;
  } else {
    x.wait();
  }
}

// A 2-column grid as the hybrid strategy builds it: rows (color = position / 2) and columns
// (color = position % 2), each with its own positions, working independently of the parent.
TEST(MpiCommunicator, SplitFormsGroupsWithTheirOwnPositions) {
  MpiCommunicator comm(MPI_COMM_WORLD, world_size() - 1 - world_rank());  // not the world order
  const int p = comm.size(), me = comm.rank();
  auto row = comm.split(me / 2, me % 2);
  auto column = comm.split(me % 2, me / 2);
  EXPECT_EQ(row->rank(), me % 2);
  EXPECT_EQ(row->size(), std::min(2, p - me / 2 * 2));
  EXPECT_EQ(column->rank(), me / 2);
  EXPECT_EQ(column->size(), (p - me % 2 + 1) / 2);
  // Each group's all-gather sees exactly its members, in their group positions.
  std::vector<std::int64_t> members(std::size_t(column->size()), -1);
  const std::int64_t mine = me;
  column->allgather(&mine, members.data(), sizeof mine);
  for (int j = 0; j < column->size(); ++j) EXPECT_EQ(members[std::size_t(j)], 2 * j + me % 2) << "column member " << j;
  EXPECT_EQ(row->allreduce(me, ReduceOp::sum), me / 2 * 2 * row->size() + (row->size() == 2 ? 1 : 0));
}

TEST(MpiCommunicator, SplitWithClashingPositionsFailsInTheGroup) {
  MpiCommunicator comm(MPI_COMM_WORLD, world_rank());
  try {
    comm.split(0, 0);  // everyone claims position 0
    if (comm.size() > 1) ADD_FAILURE() << "duplicate positions accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), RFA_ERROR_INVALID_USAGE);
  }
}

}  // namespace
}  // namespace rfa::comm
