// SPDX-License-Identifier: BSD-3-Clause
// A call whose transfers time out: the ranks agree on the call, then the last rank starts its
// first data transfer later than the deadline. The punctual ranks fail with RFA_ERROR_TIMEOUT,
// and the buffers of every call that failed so are set aside for good, not freed, neither at
// the call's end nor with the engine: the late rank can still complete an abandoned collective
// into them, or a cancelled receive may already be landing (Communicator::
// has_abandoned_transfers, engine/workspace_arena.hpp). Calls that fail otherwise free their
// buffers (the allocation and refused-buffer tests). The hybrid's ranks that wait in its inner
// ring for a group still in its all-to-all see the timeout too, not the refusal of the
// agreement that follows it on the timed-out communicator.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "allocation_log.hpp"
#include "core/positions.hpp"
#include "engine/attention_strategy.hpp"
#include "layout/distributed_gather.hpp"
#include "strategy_case.hpp"

namespace rfa {
namespace test {
namespace {

constexpr double kDeadlineSeconds = 1.0;

/// The MPI communicator whose first data transfer (an exchange or a collective over the
/// tensors; not the agreements, which use allreduce_inplace) starts `delay_s` late, on this
/// rank and on every communicator split from it.
class LateTransfers final : public comm::Communicator {
 public:
  LateTransfers(std::unique_ptr<comm::Communicator> mpi, double delay_s) : mpi_(std::move(mpi)), delay_s_(delay_s) {}

  int rank() const override { return mpi_->rank(); }
  int size() const override { return mpi_->size(); }
  const char* backend_name() const override { return mpi_->backend_name(); }
  bool accepts(comm::MemoryKind kind) const override { return mpi_->accepts(kind); }
  comm::Exchange start_shift_exchange(const void* send, void* recv, std::size_t bytes, int hops) override {
    late();
    return mpi_->start_shift_exchange(send, recv, bytes, hops);
  }
  comm::Exchange start_uneven_shift_exchange(const void* send, std::size_t send_bytes, void* recv,
                                             std::size_t recv_bytes, int hops) override {
    late();
    return mpi_->start_uneven_shift_exchange(send, send_bytes, recv, recv_bytes, hops);
  }
  void allgather(const void* send, void* recv, std::size_t bytes_per_rank) override {
    late();
    mpi_->allgather(send, recv, bytes_per_rank);
  }
  comm::Exchange start_allgather(const void* send, void* recv, std::size_t bytes_per_rank) override {
    late();
    return mpi_->start_allgather(send, recv, bytes_per_rank);
  }
  void alltoall(const void* send, void* recv, std::size_t bytes_per_pair) override {
    late();
    mpi_->alltoall(send, recv, bytes_per_pair);
  }
  void alltoallv(const void* send, const std::size_t* send_bytes, const std::size_t* send_offsets, void* recv,
                 const std::size_t* recv_bytes, const std::size_t* recv_offsets) override {
    late();
    mpi_->alltoallv(send, send_bytes, send_offsets, recv, recv_bytes, recv_offsets);
  }
  void reduce_scatter_sum(float* send, float* recv, std::size_t count_per_rank) override {
    late();
    mpi_->reduce_scatter_sum(send, recv, count_per_rank);
  }
  void allreduce_inplace(std::int64_t* values, std::size_t count, comm::ReduceOp op) override {
    mpi_->allreduce_inplace(values, count, op);
  }
  void broadcast(void* buffer, std::size_t bytes, int root) override { mpi_->broadcast(buffer, bytes, root); }
  void barrier() override { mpi_->barrier(); }
  void begin_call(const comm::CallStamp& stamp) override {
    Communicator::begin_call(stamp);
    mpi_->begin_call(stamp);
  }
  std::unique_ptr<Communicator> split(int color, int position) override {
    return std::make_unique<LateTransfers>(mpi_->split(color, position), delay_s_);
  }
  bool has_abandoned_transfers() const override { return mpi_->has_abandoned_transfers(); }

 private:
  void late() {
    if (delayed_ || delay_s_ <= 0) return;
    delayed_ = true;
    std::this_thread::sleep_for(std::chrono::duration<double>(delay_s_));
  }

  std::unique_ptr<comm::Communicator> mpi_;
  double delay_s_ = 0;
  bool delayed_ = false;
};

class AbandonedTransfersTest : public ::testing::TestWithParam<engine::StrategyKind> {};

TEST_P(AbandonedTransfersTest, TheFailedCallsBuffersAreNeverFreed) {
  if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
  rfa::test::barrier_idle(MPI_COMM_WORLD);  // start together: the late rank of the case before may still be failing
  const int P = world_size();
  const bool late = world_rank() == P - 1;
  LateTransfers comm(comm::make_mpi_communicator(MPI_COMM_WORLD, world_rank(), kDeadlineSeconds),
                     late ? 2.5 * kDeadlineSeconds : 0.0);
  engine::StrategyChoice choice;
  choice.kind = GetParam();
  if (choice.kind == engine::StrategyKind::hybrid) choice.ulysses_degree = P == 4 ? 2 : P;
  const auto cfg = strategy_config({RFA_LAYOUT_ZIGZAG, RFA_MASK_CAUSAL, 4}, RFA_DTYPE_FLOAT32);
  auto attn = engine::make_strategy(comm, cfg, choice);
  const std::int64_t L = attn->local_seq(), B = cfg.batch, H = cfg.heads, HKV = cfg.kv_heads, D = cfg.head_dim;
  Tensor4<float> q("q", B, L, H, D), k("k", B, L, HKV, D), v("v", B, L, HKV, D), out("out", B, L, H, D);
  Tensor3<float> lse("lse", B, H, L);
  bool timed_out = false;
  std::string message;
  std::int64_t held_after_call = -1;
  // The call and then the engine's destruction, in one log: what the call allocated and is
  // still live at the end was freed by neither.
  const AllocationLog log = log_allocations([&] {
    try {
      attn->forward<float>(q, k, v, out, lse);
    } catch (const Error& e) {
      message = e.what();
      timed_out = e.code() == RFA_ERROR_TIMEOUT;
    }
    held_after_call = attn->held_workspace_bytes();
    if (timed_out) attn.reset();
  });
  // The late rank may find its partners' abandoned transfers and complete a step before its
  // own deadline passes; the punctual ones cannot complete without it.
  if (!late) {
    EXPECT_TRUE(timed_out) << message;
  }
  if (!timed_out) return;
  EXPECT_GT(log.peak, 0) << "no allocation observed: are Kokkos tool hooks working?";
  EXPECT_EQ(log.live, log.peak) << "the timed-out call's buffers, which a late rank may still write, were freed: "
                                << message;
  EXPECT_EQ(held_after_call, 0) << "buffers set aside are not kept for later calls";
}

// The sharding helpers' all-gather (rfa_allgather_bshd) receives every rank's position map and
// shard into buffers of its own: when the last rank starts its all-gather of the maps past the
// deadline, the punctual ranks fail, and the late rank's arrival, which completes the abandoned
// collective, must land in those buffers, still kept, not in memory handed out again. Blocks of
// the maps buffer's size, allocated after the failure (where a freed buffer would be reused),
// must stay as written while the late rank completes it.
TEST(AbandonedShardAllGather, TheReceivedMapsAreNeverFreed) {
  if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
  rfa::test::barrier_idle(MPI_COMM_WORLD);
  const int P = world_size();
  const bool late = world_rank() == P - 1;
  const double delay_s = 2.5 * kDeadlineSeconds;
  LateTransfers comm(comm::make_mpi_communicator(MPI_COMM_WORLD, world_rank(), kDeadlineSeconds), late ? delay_s : 0.0);
  const layout::BshdDims dims{1, 2, 8};
  const std::int64_t L = 8, S = L * P;
  std::vector<float> local(std::size_t(dims.batch * L * dims.heads * dims.head_dim), 1.0f);
  std::vector<float> global(std::size_t(dims.batch * S * dims.heads * dims.head_dim), 0.0f);
  const auto begun = std::chrono::steady_clock::now();
  bool timed_out = false;
  std::string message;
  try {
    layout::allgather_bshd(comm, RFA_LAYOUT_CONTIGUOUS, local.data(), dims, global.data(), S);
  } catch (const Error& e) {
    message = e.what();
    timed_out = e.code() == RFA_ERROR_TIMEOUT;
  }
  if (late) return;  // it completes the maps' all-gather, then waits alone in the shards'
  ASSERT_TRUE(timed_out) << message;
  const std::size_t bytes = std::size_t(P) * sizeof(PositionMap);
  std::vector<std::unique_ptr<unsigned char[]>> blocks;
  for (int i = 0; i < 64; ++i) {
    blocks.emplace_back(new unsigned char[bytes]);
    std::memset(blocks.back().get(), 0xAB, bytes);
  }
  // MPI progresses the abandoned all-gather while it is polled: until the late rank has long
  // arrived.
  while (std::chrono::steady_clock::now() - begun < std::chrono::duration<double>(delay_s + 2 * kDeadlineSeconds)) {
    int flag = 0;
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::size_t changed = 0;
  for (const auto& block : blocks)
    for (std::size_t i = 0; i < bytes; ++i) changed += block[i] != 0xAB;
  EXPECT_EQ(changed, 0u) << "the late rank's position map landed in memory the all-gather had freed";
}

INSTANTIATE_TEST_SUITE_P(Strategies, AbandonedTransfersTest,
                         ::testing::Values(engine::StrategyKind::ring, engine::StrategyKind::ulysses,
                                           engine::StrategyKind::allgather, engine::StrategyKind::hybrid,
                                           engine::StrategyKind::needed),
                         [](const ::testing::TestParamInfo<engine::StrategyKind>& info) {
                           return std::string(engine::strategy_name(info.param));
                         });

}  // namespace
}  // namespace test
}  // namespace rfa
