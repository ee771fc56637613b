// SPDX-License-Identifier: BSD-3-Clause
// The NCCL ring communicator under mpiexec -n 1 and 2. On a machine without a CUDA device
// (or with fewer devices than ranks per node) the GPU tests skip, all ranks together, with
// the reason; the NcclWithoutDevice tests run there instead and skip on a GPU machine.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <thread>
#include <vector>

#include "../comm/comm_test_support.hpp"
#include "comm/device_transport.hpp"
#include "comm/nccl/nccl_communicator.hpp"
#include "comm/nccl/nccl_timeout.hpp"
#include "cuda_device_check.hpp"
#include "device/current_device.hpp"
#include "device/select_device.hpp"
#include "device_test_support.hpp"

namespace rfa::comm {
namespace {

using testing::DeviceBuffer;
using testing::expect_error;
using testing::first_mismatch;
using testing::pattern;
using testing::world_rank;
using testing::world_size;

// Decided once per process, collectively, the first time a test asks.
const std::string& why_no_gpu() {
  static const std::string reason = testing::why_no_device_for_every_rank();
  static const bool printed = [] {
    if (!reason.empty() && world_rank() == 0) {
      std::printf("[ SKIPPING ] NCCL GPU tests: %s. They need one CUDA device per rank.\n", reason.c_str());
    }
    return true;
  }();
  (void)printed;
  return reason;
}

class NcclCommunicatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    RFA_TEST_NEEDS_DEVICE(why_no_gpu());
    device::select_device_by_local_rank(MPI_COMM_WORLD);
  }
  // Identity ring order: position = world rank.
  std::unique_ptr<NcclCommunicator> make(double timeout_seconds = 60) {
    NcclOptions options;
    options.timeout_seconds = timeout_seconds;
    return std::make_unique<NcclCommunicator>(MPI_COMM_WORLD, world_rank(), options);
  }
};

TEST_F(NcclCommunicatorTest, DescribesItself) {
  auto comm = make();
  EXPECT_EQ(comm->rank(), world_rank());
  EXPECT_EQ(comm->size(), world_size());
  EXPECT_STREQ(comm->backend_name(), "nccl");
  EXPECT_TRUE(comm->accepts(MemoryKind::device));
  EXPECT_FALSE(comm->accepts(MemoryKind::host));
  EXPECT_NE(comm->communication_stream(), nullptr);
  EXPECT_EQ(comm->timeout_seconds(), 60);
}

// The context's deadline (options.timeout_s, passed down by the setup as every internal
// deadline is: > 0 seconds, 0 none, < 0 the environment's) governs the NCCL transport too.
TEST_F(NcclCommunicatorTest, TheDeviceTransportTakesTheContextsDeadline) {
  if (world_size() != 1) GTEST_SKIP() << "the device transport refuses ranks that share the one GPU";
  const auto deadline_of = [](double timeout_s) {
    auto comm = make_device_communicator(MPI_COMM_WORLD, 0, TransportChoice::nccl, timeout_s);
    auto* nccl = dynamic_cast<NcclCommunicator*>(comm.get());
    EXPECT_NE(nccl, nullptr) << comm->backend_name();
    return nccl ? nccl->timeout_seconds() : -1.0;
  };
  EXPECT_EQ(deadline_of(7.5), 7.5);
  EXPECT_EQ(deadline_of(0), std::numeric_limits<double>::infinity());
  setenv("RFA_NCCL_TIMEOUT_S", "9", 1);
  EXPECT_EQ(deadline_of(-1), 9.0);
  EXPECT_EQ(deadline_of(7.5), 7.5);  // the context's own value wins
  unsetenv("RFA_NCCL_TIMEOUT_S");
  EXPECT_EQ(deadline_of(-1), nccl::kDefaultTimeoutSeconds);
}

TEST_F(NcclCommunicatorTest, RingExchangeDeliversPrevsData) {
  auto comm = make();
  for (std::size_t bytes : {std::size_t(1), std::size_t(4097), std::size_t((1 << 20) + 3)}) {
    DeviceBuffer send(bytes), recv(bytes);
    send.upload(pattern(comm->rank(), 0, bytes));
    recv.poison();
    Exchange exchange = comm->start_ring_exchange(send.get(), recv.get(), bytes);
    exchange.wait();
    EXPECT_TRUE(exchange.done());
    const auto got = recv.download();
    EXPECT_EQ(first_mismatch(got.data(), comm->prev(), 0, bytes), bytes) << bytes << " bytes";
  }
}

TEST_F(NcclCommunicatorTest, OutstandingExchangesDoNotCross) {
  auto comm = make();
  constexpr int kInFlight = 4;
  const std::size_t bytes = 65536 + 17;  // equal sizes: only the order can keep them apart
  std::vector<std::unique_ptr<DeviceBuffer>> sends, recvs;
  std::vector<Exchange> exchanges;
  for (int k = 0; k < kInFlight; ++k) {
    sends.push_back(std::make_unique<DeviceBuffer>(bytes));
    recvs.push_back(std::make_unique<DeviceBuffer>(bytes));
    sends[k]->upload(pattern(comm->rank(), k, bytes));
    recvs[k]->poison();
  }
  for (int k = 0; k < kInFlight; ++k) {
    exchanges.push_back(comm->start_ring_exchange(sends[k]->get(), recvs[k]->get(), bytes));
  }
  // Completed in reverse order, the last one by polling test().
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!exchanges[kInFlight - 1].test()) ASSERT_LT(std::chrono::steady_clock::now(), give_up);
  for (int k = kInFlight - 2; k >= 0; --k) exchanges[k].wait();
  for (int k = 0; k < kInFlight; ++k) {
    const auto got = recvs[k]->download();
    EXPECT_EQ(first_mismatch(got.data(), comm->prev(), k, bytes), bytes) << "exchange " << k;
  }
}

TEST_F(NcclCommunicatorTest, ExchangeIsOrderedAfterTheComputeStream) {
  auto comm = make();
  cudaStream_t compute = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking), cudaSuccess);
  comm->set_compute_stream(compute);
  // The send buffer is refilled on the compute stream, behind a host function that holds the
  // stream for 200 ms, just before the exchange starts: without the event ordering the old
  // contents (pattern 0) would travel.
  const std::size_t bytes = std::size_t(1) << 20;
  DeviceBuffer send(bytes), recv(bytes), fresh(bytes);
  send.upload(pattern(comm->rank(), 0, bytes));
  fresh.upload(pattern(comm->rank(), 1, bytes));
  recv.poison();
  ASSERT_EQ(cudaLaunchHostFunc(
                compute, [](void*) { std::this_thread::sleep_for(std::chrono::milliseconds(200)); }, nullptr),
            cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(send.get(), fresh.get(), bytes, cudaMemcpyDeviceToDevice, compute), cudaSuccess);
  Exchange exchange = comm->start_ring_exchange(send.get(), recv.get(), bytes);
  exchange.wait();
  // Read back on the compute stream: wait() made it wait for the exchange.
  std::vector<unsigned char> got(bytes);
  ASSERT_EQ(cudaMemcpyAsync(got.data(), recv.get(), bytes, cudaMemcpyDeviceToHost, compute), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(compute), cudaSuccess);
  EXPECT_EQ(first_mismatch(got.data(), comm->prev(), 1, bytes), bytes);
  comm.reset();
  cudaStreamDestroy(compute);
}

TEST_F(NcclCommunicatorTest, AllgatherAlltoallBroadcast) {
  auto comm = make();
  const int p = comm->size();
  const std::size_t block = 1000 + 3;

  DeviceBuffer mine(block), all(block * p);
  mine.upload(pattern(comm->rank(), 7, block));
  all.poison();
  comm->allgather(mine.get(), all.get(), block);
  const auto gathered = all.download();
  for (int r = 0; r < p; ++r) {
    EXPECT_EQ(first_mismatch(gathered.data() + r * block, r, 7, block), block) << "allgather block " << r;
  }

  // Block r of rank s's send buffer carries pattern(s, stream = r).
  DeviceBuffer out(block * p), in(block * p);
  std::vector<unsigned char> outgoing;
  for (int r = 0; r < p; ++r) {
    const auto part = pattern(comm->rank(), r, block);
    outgoing.insert(outgoing.end(), part.begin(), part.end());
  }
  out.upload(outgoing);
  in.poison();
  comm->alltoall(out.get(), in.get(), block);
  const auto received = in.download();
  for (int s = 0; s < p; ++s) {
    EXPECT_EQ(first_mismatch(received.data() + s * block, s, comm->rank(), block), block) << "alltoall from " << s;
  }

  const int root = p - 1;
  DeviceBuffer message(block);
  if (comm->rank() == root) {
    message.upload(pattern(root, 9, block));
  } else {
    message.poison();
  }
  comm->broadcast(message.get(), block, root);
  const auto got = message.download();
  EXPECT_EQ(first_mismatch(got.data(), root, 9, block), block);

  // Validation traffic goes over MPI with host values.
  EXPECT_EQ(comm->allreduce(comm->rank() + 1, ReduceOp::sum), std::int64_t(p) * (p + 1) / 2);
  comm->barrier();
}

TEST_F(NcclCommunicatorTest, HostBuffersAreRejectedWithoutBreakingTheCommunicator) {
  auto comm = make();
  std::vector<unsigned char> host(64);
  DeviceBuffer device_buffer(64);
  expect_error(RFA_ERROR_INVALID_ARGUMENT,
               [&] { comm->start_ring_exchange(host.data(), device_buffer.get(), host.size()); });
  // Rejected before anything was queued: the communicator still works.
  DeviceBuffer send(64), recv(64);
  send.upload(pattern(comm->rank(), 3, 64));
  recv.poison();
  comm->start_ring_exchange(send.get(), recv.get(), 64).wait();
  const auto got = recv.download();
  EXPECT_EQ(first_mismatch(got.data(), comm->prev(), 3, 64), std::size_t(64));
}

TEST_F(NcclCommunicatorTest, ExchangeWhoseNeighbourNeverPostsTimesOut) {
  if (world_size() < 2) GTEST_SKIP() << "needs a neighbour; the one-rank case is the next test";
  auto comm = make(/*timeout_seconds=*/2);
  // Only ring position 1 starts an exchange: its receive from position 0 can never match.
  if (comm->rank() == 1) {
    DeviceBuffer send(4096), recv(4096);
    Exchange exchange = comm->start_ring_exchange(send.get(), recv.get(), 4096);
    const std::string message = expect_error(RFA_ERROR_TIMEOUT, [&] { exchange.wait(); });
    EXPECT_NE(message.find("did not complete within"), std::string::npos) << message;
    // Aborted: every later call says so instead of hanging.
    expect_error(RFA_ERROR_NCCL, [&] { comm->start_ring_exchange(send.get(), recv.get(), 4096); });
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST_F(NcclCommunicatorTest, ExchangeStuckBehindComputeTimesOut) {
  if (world_size() != 1) GTEST_SKIP() << "one rank only (it blocks its own compute stream)";
  auto comm = make(/*timeout_seconds=*/1);
  cudaStream_t compute = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking), cudaSuccess);
  comm->set_compute_stream(compute);
  // A host function that holds the compute stream for 4 s, four times the timeout: the
  // exchange, ordered after it, cannot finish in time. On an H100 the test hung while nothing
  // released the stream (most likely in the abort that follows the timeout: ncclCommAbort
  // frees device memory, which waits for work already queued), so a watchdog thread plays a
  // compute that is slow, not one that never ends.
  static std::atomic<bool> released;
  released = false;
  DeviceBuffer send(256), recv(256);
  ASSERT_EQ(cudaLaunchHostFunc(
                compute,
                [](void*) {
                  while (!released) std::this_thread::yield();
                },
                nullptr),
            cudaSuccess);
  std::thread watchdog([] {
    std::this_thread::sleep_for(std::chrono::seconds(4));
    released = true;
  });
  const auto started = std::chrono::steady_clock::now();
  Exchange exchange = comm->start_ring_exchange(send.get(), recv.get(), 256);
  const std::string message = expect_error(RFA_ERROR_TIMEOUT, [&] { exchange.wait(); });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  watchdog.join();
  EXPECT_NE(message.find("did not complete within"), std::string::npos) << message;
  EXPECT_GE(seconds, 1.0) << "the timeout is 1 s";
  // The abort does not stop the self-exchange's copy queued behind the compute stream: the
  // engine must keep the buffers it may still write.
  EXPECT_TRUE(comm->has_abandoned_transfers());
  std::printf("  exchange behind a 4 s compute with a 1 s timeout: RFA_ERROR_TIMEOUT after %.2f s\n", seconds);
  ASSERT_EQ(cudaStreamSynchronize(compute), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(static_cast<cudaStream_t>(comm->communication_stream())), cudaSuccess);
  comm.reset();
  cudaStreamDestroy(compute);
}

TEST_F(NcclCommunicatorTest, DeviceHelpers) {
  int count = 0;
  ASSERT_EQ(cudaGetDeviceCount(&count), cudaSuccess);
  const int device = device::select_device_by_local_rank(MPI_COMM_WORLD);
  int current = -1;
  ASSERT_EQ(cudaGetDevice(&current), cudaSuccess);
  EXPECT_EQ(device, current);
  EXPECT_LT(device, count);
  const std::string bus_id = device::current_device_pci_bus_id();
  EXPECT_EQ(bus_id.size(), std::size_t(12)) << bus_id;  // "dddd:bb:dd.f"
  EXPECT_EQ(bus_id[4], ':') << bus_id;
}

// ---- without a GPU: creation must fail the same way on every rank, without hanging.

/// True on every rank when some rank sees a CUDA device (agreed, so all ranks skip together).
bool some_rank_has_a_device() {
  int count = 0;
  int has = cudaGetDeviceCount(&count) == cudaSuccess && count > 0 ? 1 : 0;
  cudaGetLastError();
  MPI_Allreduce(MPI_IN_PLACE, &has, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return has != 0;
}

TEST(NcclWithoutDevice, CreationFailsWithCudaErrorOnEveryRank) {
  // Ranks that share a GPU are NCCL's own refusal (the C API's NcclRefusesRanksSharingAGpu
  // test), not this one.
  if (some_rank_has_a_device()) GTEST_SKIP() << "a rank has a CUDA device";
  // Every rank gets the lowest failing rank's code and message.
  const std::string message = expect_error(RFA_ERROR_CUDA, [] { NcclCommunicator comm(MPI_COMM_WORLD, world_rank()); });
  EXPECT_NE(message.find("no usable CUDA device"), std::string::npos) << message;
  std::printf("[rank %d] NcclCommunicator without a device: %s\n", world_rank(), message.c_str());
  // Every rank got here: nobody hangs in a collective the others skipped.
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST(NcclWithoutDevice, DeviceHelpersFailWithCudaError) {
  int count = 0;
  if (cudaGetDeviceCount(&count) == cudaSuccess && count > 0) GTEST_SKIP() << "this rank has a CUDA device";
  cudaGetLastError();
  const std::string message = expect_error(RFA_ERROR_CUDA, [] { device::select_device_by_local_rank(MPI_COMM_WORLD); });
  EXPECT_NE(message.find("no usable CUDA device"), std::string::npos) << message;
  expect_error(RFA_ERROR_CUDA, [] { device::current_device_pci_bus_id(); });
  EXPECT_FALSE(device::is_device_memory(&count));
}

}  // namespace
}  // namespace rfa::comm
