// SPDX-License-Identifier: BSD-3-Clause
// The staged transport's state machine (src/comm/staged) on the host, under mpiexec -n 1..4:
// a fake staging device whose "device" memory is host memory and whose copies complete late
// and out of order, so that the ordering rules (exchanges reach MPI in the order they were
// started, their copies come after the kernels queued before them and not after later ones, a
// wait on the wire lets the later exchanges reach it, the pinned pool is reused) are exercised
// without a GPU, and so are its timeouts (the exchanges in flight given up at once, the pinned
// buffers MPI may still use never freed; a copy that never ends, as behind a stuck kernel, failing
// within the deadline instead of hanging the ranks). The CUDA staging device is the same interface over
// cudaMemcpyAsync and events; it runs in the GPU suites.
#include "comm/staged/staged_communicator.hpp"

#include <gtest/gtest.h>
#include <mpi.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "comm/mpi/mpi_communicator.hpp"
#include "comm_test_support.hpp"

namespace rfa::comm {
namespace {

using testing::world_rank;
using testing::world_size;

/// A copy that happens on its `polls`-th done() query: until then nothing has moved.
class LateCopy final : public CopyTicket {
 public:
  LateCopy(void* dst, const void* src, std::size_t bytes, int polls, int* pending)
      : dst_(dst), src_(src), bytes_(bytes), polls_left_(polls), pending_(pending) {
    ++*pending_;
  }
  ~LateCopy() override {
    if (polls_left_ > 0) --*pending_;
  }
  bool done() override {
    if (polls_left_ > 0 && --polls_left_ == 0) {
      std::memcpy(dst_, src_, bytes_);
      --*pending_;
    }
    return polls_left_ == 0;
  }

 private:
  void* dst_;
  const void* src_;
  std::size_t bytes_;
  int polls_left_;
  int* pending_;
};

/// A point on the fake compute stream: how many kernels had been queued there.
struct CountMark final : public ComputeMark {
  explicit CountMark(int queued) : queued(queued) {}
  int queued;
};

/// Copies complete after a varying number of polls (1, 6, 3, 8, ...), so a later copy often
/// finishes before an earlier one. The pinned side of every copy must lie inside one pinned
/// buffer, as a DMA engine needs (a copy past its end would write other memory on a GPU).
/// The compute stream is a count of the kernels queued (queue_kernel()); each copy records the
/// count of the mark it is ordered after.
class FakeStagingDevice final : public StagingDevice {
 public:
  /// `frees`, if given, counts the pinned buffers freed (it outlives the device).
  explicit FakeStagingDevice(int* pending, int* frees = nullptr) : pending_(pending), frees_(frees) {}
  std::unique_ptr<ComputeMark> mark_compute() override { return std::make_unique<CountMark>(kernels_queued_); }
  std::unique_ptr<CopyTicket> copy_to_host(void* dst, const void* src, std::size_t bytes,
                                           const ComputeMark& after) override {
    expect_pinned(dst, bytes, "a copy to the host");
    out_after.push_back(dynamic_cast<const CountMark&>(after).queued);
    return std::make_unique<LateCopy>(dst, src, bytes, stall_off_ ? kNever : next_delay(), pending_);
  }
  std::unique_ptr<CopyTicket> copy_to_device(void* dst, const void* src, std::size_t bytes,
                                             const ComputeMark& after) override {
    expect_pinned(src, bytes, "a copy to the device");
    in_after.push_back(dynamic_cast<const CountMark&>(after).queued);
    return std::make_unique<LateCopy>(dst, src, bytes, stall_onto_ ? kNever : next_delay(), pending_);
  }
  /// The copies queued from now on off the device, onto it, or both, never complete (as behind
  /// a kernel that never ends); siblings made afterwards inherit it.
  void stall_copies(bool off_device, bool onto_device) {
    stall_off_ = off_device;
    stall_onto_ = onto_device;
  }
  /// A kernel is queued on the compute stream.
  void queue_kernel() { ++kernels_queued_; }
  /// The next copies take the delays from the k-th of the sequence on.
  void start_delays_at(int k) { counter_ = k; }
  void* allocate_host(std::size_t bytes) override {
    ++allocations;
    void* p = ::operator new(bytes);
    pinned_[static_cast<const char*>(p)] = bytes;
    return p;
  }
  void free_host(void* p) noexcept override {
    if (frees_ != nullptr) ++*frees_;
    pinned_.erase(static_cast<const char*>(p));
    ::operator delete(p);
  }
  void set_compute_stream(void* stream) override { stream_ = stream; }
  std::unique_ptr<StagingDevice> make_sibling() override {
    auto sibling = std::make_unique<FakeStagingDevice>(pending_);
    sibling->stream_ = stream_;
    sibling->stall_copies(stall_off_, stall_onto_);
    return sibling;
  }

  int allocations = 0;
  void* stream_ = nullptr;
  /// For each copy off and onto the device, in the order queued: the kernels it comes after.
  std::vector<int> out_after, in_after;

 private:
  void expect_pinned(const void* p, std::size_t bytes, const char* what) const {
    const char* const at = static_cast<const char*>(p);
    auto it = pinned_.upper_bound(at);
    if (it == pinned_.begin()) {
      ADD_FAILURE() << what << " of " << bytes << " bytes is not in a pinned buffer";
      return;
    }
    --it;
    EXPECT_LE(std::size_t(at - it->first) + bytes, it->second)
        << what << " of " << bytes << " bytes at offset " << (at - it->first) << " runs past its pinned buffer of "
        << it->second << " bytes";
  }
  int next_delay() { return 1 + (counter_++ * 5) % 8; }
  static constexpr int kNever = std::numeric_limits<int>::max();  // polls: more than any test makes
  bool stall_off_ = false, stall_onto_ = false;
  std::map<const char*, std::size_t> pinned_;  // the pinned buffers by start: their sizes
  int counter_ = 0;
  int kernels_queued_ = 0;
  int* pending_;
  int* frees_;
};

struct Staged {
  int pending = 0;
  FakeStagingDevice* device = nullptr;
  std::unique_ptr<StagedCommunicator> comm;
  /// `timeout_s`: the deadline of the host transport and of the copies (-1: the default);
  /// `frees` as the device's.
  explicit Staged(double timeout_s = -1.0, int* frees = nullptr) {
    auto fake = std::make_unique<FakeStagingDevice>(&pending, frees);
    device = fake.get();
    comm = std::make_unique<StagedCommunicator>(make_mpi_communicator(MPI_COMM_WORLD, world_rank(), timeout_s),
                                                std::move(fake), timeout_s);
  }
};

std::vector<int> block(int owner, int tag, std::size_t n) {
  std::vector<int> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = owner * 1000003 + tag * 7919 + int(i);
  return v;
}

TEST(StagedCommunicator, DescribesItself) {
  Staged s;
  EXPECT_STREQ(s.comm->backend_name(), "mpi-staged");
  EXPECT_STREQ(s.comm->host_memory().backend_name(), "mpi");  // the host transport, for host memory
  EXPECT_TRUE(s.comm->accepts(MemoryKind::device));
  EXPECT_FALSE(s.comm->accepts(MemoryKind::host));
  EXPECT_EQ(s.comm->rank(), world_rank());
  EXPECT_EQ(s.comm->size(), world_size());
  int stream_marker = 0;
  s.comm->set_compute_stream(&stream_marker);
  EXPECT_EQ(s.device->stream_, &stream_marker);
}

// K and V of a whole ring pass, two exchanges in flight per step as the engine has them: every
// rank ends up having seen every block, in ring order, although copies finish out of order.
TEST(StagedCommunicator, RingPassDeliversEveryBlockInOrder) {
  Staged s;
  const int P = world_size(), me = world_rank();
  const std::size_t n = 3001;  // not a multiple of anything in particular
  std::vector<int> k = block(me, 0, n), v = block(me, 1, n);
  std::vector<int> k_next(n), v_next(n);
  for (int step = 0; step + 1 < P; ++step) {
    Exchange xk = s.comm->start_ring_exchange(k.data(), k_next.data(), n * sizeof(int));
    Exchange xv = s.comm->start_ring_exchange(v.data(), v_next.data(), n * sizeof(int));
    xv.wait();  // the later one first: it must not overtake the earlier on the wire
    xk.wait();
    const int owner = (me - step - 1 + P) % P;
    ASSERT_EQ(k_next, block(owner, 0, n)) << "step " << step;
    ASSERT_EQ(v_next, block(owner, 1, n)) << "step " << step;
    k.swap(k_next);
    v.swap(v_next);
  }
  EXPECT_EQ(s.pending, 0);
  // Two pinned buffers per exchange in flight, reused from step to step.
  EXPECT_LE(s.device->allocations, 4);
  EXPECT_EQ(s.comm->pinned_bytes(), std::size_t(s.device->allocations) * n * sizeof(int));
}

// Exchanges that grow and shrink: each is staged through a pinned buffer large enough for it,
// the pool's smaller free buffers passed over and kept for the smaller exchanges after.
TEST(StagedCommunicator, EachExchangeGetsAPinnedBufferLargeEnough) {
  Staged s;
  const int P = world_size(), me = world_rank();
  for (const std::size_t n : {std::size_t(16), std::size_t(4096), std::size_t(16), std::size_t(70000),
                              std::size_t(1000), std::size_t(4096)}) {
    std::vector<int> send = block(me, int(n % 97), n), recv(n, -1);
    s.comm->start_ring_exchange(send.data(), recv.data(), n * sizeof(int)).wait();
    ASSERT_EQ(recv, block((me - 1 + P) % P, int(n % 97), n)) << n << " ints";
  }
  EXPECT_EQ(s.pending, 0);
  // A send and a receive buffer were made only where no free one was large enough: for 16,
  // 4096 and 70000 ints.
  EXPECT_EQ(s.comm->pinned_bytes(), 2 * (16 + 4096 + 70000) * sizeof(int));
}

// A shift of h hops through the staging buffers delivers the block of the rank h positions
// behind, for every h from 1 to P (P: the rank's own).
TEST(StagedCommunicator, ShiftExchangeDeliversTheBlockThatManyHopsBehind) {
  Staged s;
  const int P = world_size(), me = world_rank();
  const std::size_t n = 999;
  for (int h = 1; h <= P; ++h) {
    std::vector<int> send = block(me, h, n), recv(n);
    s.comm->start_shift_exchange(send.data(), recv.data(), n * sizeof(int), h).wait();
    EXPECT_EQ(recv, block((me - h % P + P) % P, h, n)) << "hops " << h;
  }
  EXPECT_EQ(s.pending, 0);
}

// An exchange's copies wait for the kernels queued before it started (which made its send
// buffer, or may still read its receive buffer), not for the kernel queued after: a ring step's
// next block comes onto the device while the kernel on the current one runs. A collective's
// copies wait for everything queued before it.
TEST(StagedCommunicator, CopiesWaitOnlyForTheKernelsQueuedBeforeTheExchange) {
  Staged s;
  const int P = world_size(), me = world_rank();
  const std::size_t n = 40;
  std::vector<int> k = block(me, 6, n), k_next(n);
  s.device->queue_kernel();  // the kernel of the step before
  Exchange x = s.comm->start_ring_exchange(k.data(), k_next.data(), n * sizeof(int));
  s.device->queue_kernel();  // the kernel on the block held now
  x.wait();
  EXPECT_EQ(k_next, block((me - 1 + P) % P, 6, n));
  EXPECT_EQ(s.device->out_after, std::vector<int>({1}));
  EXPECT_EQ(s.device->in_after, std::vector<int>({1})) << "the copy onto the device waited for the kernel queued "
                                                          "after its exchange started";
  s.device->queue_kernel();
  std::vector<int> all(n * std::size_t(P));
  s.comm->allgather(k.data(), all.data(), n * sizeof(int));
  EXPECT_EQ(s.device->out_after, std::vector<int>({1, 3}));
  EXPECT_EQ(s.device->in_after, std::vector<int>({1, 3}));
}

// The all-gather is started, not run to its end: its copy onto the device comes after the
// kernels queued before it started, not after those queued since (the KV all-gather strategy
// gathers the next chunk while it computes on the current one), and it delivers every rank's
// block.
TEST(StagedCommunicator, AllgatherIsStartedBesideTheKernelsQueuedAfterIt) {
  Staged s;
  const int P = world_size(), me = world_rank();
  const std::size_t n = 50;
  std::vector<int> mine = block(me, 9, n), all(n * std::size_t(P), -1);
  s.device->queue_kernel();
  Exchange gather = s.comm->start_allgather(mine.data(), all.data(), n * sizeof(int));
  EXPECT_FALSE(gather.done()) << "the all-gather ran to its end before start_allgather returned";
  s.device->queue_kernel();
  gather.wait();
  for (int r = 0; r < P; ++r)
    EXPECT_EQ(std::vector<int>(all.begin() + std::ptrdiff_t(n) * r, all.begin() + std::ptrdiff_t(n) * (r + 1)),
              block(r, 9, n))
        << "rank " << r << "'s block";
  EXPECT_EQ(s.device->out_after, std::vector<int>({1}));
  EXPECT_EQ(s.device->in_after, std::vector<int>({1}));
  EXPECT_EQ(s.pending, 0);
}

// A collective called while a started all-gather is still being copied off the device on some
// ranks and already gathering on others reaches MPI after the all-gather on every rank, as the
// ranks called them (MPI matches collectives by their order): each kind of collective in turn.
TEST(StagedCommunicator, ACollectiveAfterAStartedAllgatherReachesMpiAfterItEverywhere) {
  if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
  Staged s(5.0);
  const int P = world_size(), me = world_rank();
  const std::size_t n = 20;
  std::vector<int> to(static_cast<std::size_t>(P)), from(static_cast<std::size_t>(P));
  for (int r = 0; r < P; ++r) to[std::size_t(r)] = me * 100 + r;
  const std::vector<std::size_t> one_int(static_cast<std::size_t>(P), sizeof(int));
  std::vector<std::size_t> offsets;
  for (int r = 0; r < P; ++r) offsets.push_back(std::size_t(r) * sizeof(int));
  const std::vector<std::pair<const char*, std::function<void()>>> collectives = {
      {"alltoall",
       [&] {
         s.comm->alltoall(to.data(), from.data(), sizeof(int));
         for (int r = 0; r < P; ++r) EXPECT_EQ(from[std::size_t(r)], r * 100 + me);
       }},
      {"alltoallv",
       [&] {
         s.comm->alltoallv(to.data(), one_int.data(), offsets.data(), from.data(), one_int.data(), offsets.data());
         for (int r = 0; r < P; ++r) EXPECT_EQ(from[std::size_t(r)], r * 100 + me);
       }},
      {"allreduce_inplace",
       [&] {
         std::int64_t value = me + 1;
         s.comm->allreduce_inplace(&value, 1, ReduceOp::sum);
         EXPECT_EQ(value, std::int64_t(P) * (P + 1) / 2);
       }},
      {"broadcast",
       [&] {
         int root_value = me == 0 ? 77 : -1;
         s.comm->broadcast(&root_value, sizeof root_value, 0);
         EXPECT_EQ(root_value, 77);
       }},
      {"barrier", [&] { s.comm->barrier(); }},
  };
  for (const auto& [name, call] : collectives) {
    SCOPED_TRACE(name);
    s.device->start_delays_at(me % 2);  // the copy off the device: 1 poll on even ranks, 6 on odd ones
    std::vector<int> mine = block(me, 10, n), all(n * std::size_t(P), -1);
    std::fill(from.begin(), from.end(), -1);
    Exchange gather = s.comm->start_allgather(mine.data(), all.data(), n * sizeof(int));
    call();
    gather.wait();
    for (int r = 0; r < P; ++r)
      ASSERT_EQ(std::vector<int>(all.begin() + std::ptrdiff_t(n) * r, all.begin() + std::ptrdiff_t(n) * (r + 1)),
                block(r, 10, n))
          << "rank " << r << "'s block";
  }
  EXPECT_EQ(s.pending, 0);
}

/// The MPI transport with a slow wire: each exchange answers "not done" to its first
/// kSlowPolls tests; `posted` counts the exchanges started on it and `posted_at_wait` records,
/// at each wait on one, how many had been started.
class SlowWire final : public Communicator {
 public:
  static constexpr int kSlowPolls = 20;  // more than the fake device's slowest copy takes
  explicit SlowWire(std::unique_ptr<Communicator> mpi) : mpi_(std::move(mpi)) {}

  int rank() const override { return mpi_->rank(); }
  int size() const override { return mpi_->size(); }
  const char* backend_name() const override { return mpi_->backend_name(); }
  bool accepts(MemoryKind kind) const override { return mpi_->accepts(kind); }
  Exchange start_shift_exchange(const void* send, void* recv, std::size_t bytes, int hops) override {
    ++posted;
    return Exchange(std::make_unique<Slow>(mpi_->start_shift_exchange(send, recv, bytes, hops), *this));
  }
  void allgather(const void* send, void* recv, std::size_t bytes_per_rank) override {
    mpi_->allgather(send, recv, bytes_per_rank);
  }
  void alltoall(const void* send, void* recv, std::size_t bytes_per_pair) override {
    mpi_->alltoall(send, recv, bytes_per_pair);
  }
  void allreduce_inplace(std::int64_t* values, std::size_t count, ReduceOp op) override {
    mpi_->allreduce_inplace(values, count, op);
  }
  void broadcast(void* buffer, std::size_t bytes, int root) override { mpi_->broadcast(buffer, bytes, root); }
  void barrier() override { mpi_->barrier(); }
  bool has_abandoned_transfers() const override { return mpi_->has_abandoned_transfers(); }

  int posted = 0;
  std::vector<int> posted_at_wait;

 private:
  class Slow final : public detail::PendingExchange {
   public:
    Slow(Exchange inner, SlowWire& wire) : inner_(std::move(inner)), wire_(wire) {}
    bool test() override { return polls_left_-- > 0 ? false : inner_.test(); }
    void wait() override {
      wire_.posted_at_wait.push_back(wire_.posted);
      inner_.wait();
    }

   private:
    Exchange inner_;
    SlowWire& wire_;
    int polls_left_ = kSlowPolls;
  };
  std::unique_ptr<Communicator> mpi_;
};

// Waiting for an exchange on the wire still hands the exchanges started after it to the wire as
// their copies off the device end: a ring step's K and V cross together, not one after the
// other (V's copy, queued behind K's, ends a little later).
TEST(StagedCommunicator, WaitingForAnExchangeStillPostsTheOnesStartedAfterIt) {
  int pending = 0;
  auto wire = std::make_unique<SlowWire>(make_mpi_communicator(MPI_COMM_WORLD, world_rank(), -1.0));
  SlowWire* w = wire.get();
  StagedCommunicator comm(std::move(wire), std::make_unique<FakeStagingDevice>(&pending));
  const int P = world_size(), me = world_rank();
  const std::size_t n = 300;
  std::vector<int> k = block(me, 7, n), v = block(me, 8, n), k_next(n), v_next(n);
  Exchange xk = comm.start_ring_exchange(k.data(), k_next.data(), n * sizeof(int));  // off the device in 1 poll
  Exchange xv = comm.start_ring_exchange(v.data(), v_next.data(), n * sizeof(int));  // in 6
  xk.wait();
  xv.wait();
  EXPECT_EQ(k_next, block((me - 1 + P) % P, 7, n));
  EXPECT_EQ(v_next, block((me - 1 + P) % P, 8, n));
  EXPECT_EQ(w->posted, 2);
  ASSERT_FALSE(w->posted_at_wait.empty());
  for (int posted : w->posted_at_wait)
    EXPECT_EQ(posted, 2) << "a wait on the wire held back an exchange still coming off the device";
  EXPECT_EQ(pending, 0);
}

// Exchanges whose handles are destroyed unfinished are completed, not dropped.
TEST(StagedCommunicator, DestroyedHandlesStillComplete) {
  Staged s;
  const int P = world_size(), me = world_rank();
  const std::size_t n = 17;
  std::vector<int> send = block(me, 2, n), recv(n, -1);
  { Exchange x = s.comm->start_ring_exchange(send.data(), recv.data(), n * sizeof(int)); }
  EXPECT_EQ(recv, block((me - 1 + P) % P, 2, n));
  EXPECT_EQ(s.pending, 0);
}

TEST(StagedCommunicator, CollectivesStageThroughHostBuffers) {
  Staged s;
  const int P = world_size(), me = world_rank();
  std::vector<int> mine = block(me, 3, 5), all(std::size_t(5 * P), -1);
  s.comm->allgather(mine.data(), all.data(), 5 * sizeof(int));
  for (int r = 0; r < P; ++r)
    EXPECT_EQ(std::vector<int>(all.begin() + 5 * r, all.begin() + 5 * (r + 1)), block(r, 3, 5));
  std::vector<int> to(static_cast<std::size_t>(P)), from(static_cast<std::size_t>(P), -1);
  for (int r = 0; r < P; ++r) to[std::size_t(r)] = me * 100 + r;
  s.comm->alltoall(to.data(), from.data(), sizeof(int));
  for (int r = 0; r < P; ++r) EXPECT_EQ(from[std::size_t(r)], r * 100 + me);
  int value = me == P - 1 ? 42 : -1;
  s.comm->broadcast(&value, sizeof value, P - 1);
  EXPECT_EQ(value, 42);
  EXPECT_EQ(s.pending, 0);
}

// The strategies' collectives: an all-to-all(v) of a different length per pair (own block left
// out, as the head exchange does, whose bytes must stay untouched), a reduce-scatter, and a
// split whose sub-communicators stage through sibling devices.
TEST(StagedCommunicator, IrregularCollectivesAndSplitsStageThroughHostBuffers) {
  Staged s;
  const int P = world_size(), me = world_rank();
  const auto len = [](int from, int to) { return std::size_t(1 + (from + 2 * to) % 3); };  // ints
  std::vector<std::size_t> send_bytes, send_offsets, recv_bytes, recv_offsets;
  std::size_t send_total = 0, recv_total = 0;
  for (int r = 0; r < P; ++r) {
    send_offsets.push_back(send_total * sizeof(int));
    send_bytes.push_back(r == me ? 0 : len(me, r) * sizeof(int));
    send_total += len(me, r);
    recv_offsets.push_back(recv_total * sizeof(int));
    recv_bytes.push_back(r == me ? 0 : len(r, me) * sizeof(int));
    recv_total += len(r, me);
  }
  std::vector<int> send(send_total), recv(recv_total, -7);
  for (int r = 0; r < P; ++r)
    for (std::size_t i = 0; i < len(me, r); ++i)
      send[send_offsets[std::size_t(r)] / sizeof(int) + i] = block(me, r, 3)[i];
  s.comm->alltoallv(send.data(), send_bytes.data(), send_offsets.data(), recv.data(), recv_bytes.data(),
                    recv_offsets.data());
  for (int r = 0; r < P; ++r)
    for (std::size_t i = 0; i < len(r, me); ++i)
      EXPECT_EQ(recv[recv_offsets[std::size_t(r)] / sizeof(int) + i], r == me ? -7 : block(r, me, 3)[i])
          << "from rank " << r << ", element " << i;

  std::vector<float> parts(std::size_t(2 * P)), mine(2, -1.0f);
  for (int r = 0; r < P; ++r) {
    parts[std::size_t(2 * r)] = float(me + r);
    parts[std::size_t(2 * r + 1)] = float(10 * me);
  }
  s.comm->reduce_scatter_sum(parts.data(), mine.data(), 2);
  EXPECT_EQ(mine[0], float(P * (P - 1) / 2 + P * me));
  EXPECT_EQ(mine[1], float(10 * P * (P - 1) / 2));

  int stream_marker = 0;
  s.comm->set_compute_stream(&stream_marker);
  std::unique_ptr<Communicator> half = s.comm->split(me % 2, me / 2);
  EXPECT_STREQ(half->backend_name(), "mpi-staged");
  EXPECT_EQ(half->size(), (P + 1 - me % 2) / 2);
  EXPECT_EQ(half->rank(), me / 2);
  std::vector<int> mine_v = block(me, 5, 4), all(std::size_t(4 * half->size()), -1);
  half->allgather(mine_v.data(), all.data(), 4 * sizeof(int));
  for (int r = 0; r < half->size(); ++r)
    EXPECT_EQ(std::vector<int>(all.begin() + 4 * r, all.begin() + 4 * (r + 1)), block(2 * r + me % 2, 5, 4));
  EXPECT_EQ(s.pending, 0);
}

// Once a wait has timed out, the exchanges a call had in flight are given up at once, as the
// host transport's own are: the call returns within one deadline however many it had, and the
// timed-out one is not waited for again (which would report its empty receive as a mismatch of
// the ranks' exchanges).
TEST(StagedCommunicator, ExchangesInFlightAfterATimeoutAreGivenUpAtOnce) {
  if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
  const int silent = 1;
  {
    Staged s(0.5);
    const std::size_t n = std::size_t(1) << 20;  // bytes: past the eager limit, so a send needs its peer
    std::vector<char> send(n, 1), recv_a(n), recv_b(n), recv_c(n);
    const bool beside_silent = world_rank() != silent && ((world_rank() + 1) % world_size() == silent ||
                                                          (world_rank() - 1 + world_size()) % world_size() == silent);
    if (beside_silent) {
      const auto start = std::chrono::steady_clock::now();
      ::testing::internal::CaptureStderr();
      {
        Exchange a = s.comm->start_ring_exchange(send.data(), recv_a.data(), n);
        Exchange b = s.comm->start_ring_exchange(send.data(), recv_b.data(), n);
        Exchange c = s.comm->start_ring_exchange(send.data(), recv_c.data(), n);
        // Polls advance every exchange's copy (the fake's take at most 8), so all three reach MPI.
        for (int poll = 0; poll < 10; ++poll) EXPECT_FALSE(c.test());
        EXPECT_THROW(a.wait(), Error);
      }  // b and c dropped unfinished, as an error unwinding a call drops them
      const std::string said = ::testing::internal::GetCapturedStderr();
      const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      EXPECT_GE(waited, 0.4);
      EXPECT_LE(waited, 0.9) << "the exchanges in flight were each given a deadline of their own";
      EXPECT_EQ(said.find("every rank must start the same exchanges"), std::string::npos)
          << "a timed-out exchange was waited for again: " << said;
    }
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(world_rank() == silent ? 1500 : 0));
  rfa::test::barrier_idle(MPI_COMM_WORLD);
}

// An all-to-all that the last rank joins only after the others gave up: on those it fails with
// RFA_ERROR_TIMEOUT, and the pinned buffers MPI works on are set aside, never reused or freed
// (MPI may still write the late rank's data into them), while the buffers of the all-to-all
// that completed before it are freed with the communicator.
TEST(StagedCommunicator, PinnedBuffersOfATimedOutCollectiveAreNeverFreed) {
  if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
  const int P = world_size(), me = world_rank(), late = P - 1;
  int frees = 0, allocations = 0;
  {
    Staged s(0.3, &frees);
    std::vector<int> to(static_cast<std::size_t>(P), me), from(static_cast<std::size_t>(P), -1);
    s.comm->alltoall(to.data(), from.data(), sizeof(int));  // two small buffers, back to the pool
    const std::size_t n = std::size_t(1) << 16;             // ints per pair: past the eager limit
    std::vector<int> big_to(n * std::size_t(P), me), big_from(n * std::size_t(P), -1);
    if (me == late) std::this_thread::sleep_for(std::chrono::milliseconds(800));
    try {
      s.comm->alltoall(big_to.data(), big_from.data(), n * sizeof(int));  // two new, larger buffers
      if (me != late) ADD_FAILURE() << "the all-to-all completed although the last rank had not joined";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), RFA_ERROR_TIMEOUT) << e.what();  // the late rank too, if the others are slow to progress it
    }
    EXPECT_EQ(s.pending, 0);
    allocations = s.device->allocations;
  }
  if (me != late) {
    EXPECT_EQ(allocations, 4);
    EXPECT_EQ(frees, 2) << "the timed-out all-to-all's pinned buffers were freed (or the completed one's kept)";
  }
  rfa::test::barrier_idle(MPI_COMM_WORLD);
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// A ring exchange whose copy off the device never completes (every rank's: none reaches MPI):
// its wait fails with RFA_ERROR_TIMEOUT after about the deadline instead of spinning for good;
// then the transport refuses new work and reports abandoned transfers, and the pinned buffers
// the copy may still write are set aside, never freed.
TEST(StagedCommunicator, ACopyOffTheDeviceThatNeverEndsTimesOut) {
  int frees = 0;
  {
    Staged s(0.3, &frees);
    s.device->stall_copies(true, false);
    std::vector<char> send(256, 1), recv(256, 0);
    const auto start = std::chrono::steady_clock::now();
    Exchange e = s.comm->start_ring_exchange(send.data(), recv.data(), send.size());
    const std::string message = rfa::comm::testing::expect_error(RFA_ERROR_TIMEOUT, [&] { e.wait(); });
    const double waited = seconds_since(start);
    EXPECT_GE(waited, 0.25);
    EXPECT_LE(waited, 3.0) << "the copy's deadline was not the transport's";
    EXPECT_NE(message.find("copy off the device did not complete within 0.3 s"), std::string::npos) << message;
    EXPECT_TRUE(s.comm->has_abandoned_transfers());
    const std::string refused = rfa::comm::testing::expect_error(
        RFA_ERROR_INVALID_USAGE, [&] { s.comm->start_ring_exchange(send.data(), recv.data(), send.size()); });
    EXPECT_NE(refused.find("unusable"), std::string::npos) << refused;
    rfa::comm::testing::expect_error(RFA_ERROR_INVALID_USAGE, [&] { s.comm->barrier(); });
  }
  EXPECT_EQ(frees, 0) << "a pinned buffer that the timed-out copy may still write was freed";
  rfa::test::barrier_idle(MPI_COMM_WORLD);
}

// The copy onto the device after the host transfer completed never does: the same timeout,
// naming that copy.
TEST(StagedCommunicator, ACopyOntoTheDeviceThatNeverEndsTimesOut) {
  rfa::test::barrier_idle(MPI_COMM_WORLD);
  Staged s(1.5);
  s.device->stall_copies(false, true);
  std::vector<int> send = block(world_rank(), 3, 64), recv(64, -1);
  Exchange e = s.comm->start_ring_exchange(send.data(), recv.data(), send.size() * sizeof(int));
  const std::string message = rfa::comm::testing::expect_error(RFA_ERROR_TIMEOUT, [&] { e.wait(); });
  EXPECT_NE(message.find("copy onto the device did not complete within 1.5 s"), std::string::npos) << message;
  EXPECT_TRUE(s.comm->has_abandoned_transfers());
  rfa::test::barrier_idle(MPI_COMM_WORLD);
}

// A collective's copies stage through buffers of their own and wait for them the same way; a
// split of the transport inherits its deadline.
TEST(StagedCommunicator, CollectiveCopiesAndSplitsTimeOutToo) {
  const int P = world_size();
  {
    Staged s(0.3);
    s.device->stall_copies(true, false);
    std::vector<int> to(static_cast<std::size_t>(P), 1), from(static_cast<std::size_t>(P), -1);
    const auto start = std::chrono::steady_clock::now();
    const std::string message = rfa::comm::testing::expect_error(
        RFA_ERROR_TIMEOUT, [&] { s.comm->alltoall(to.data(), from.data(), sizeof(int)); });
    EXPECT_LE(seconds_since(start), 3.0);
    EXPECT_NE(message.find("collective's copy off the device"), std::string::npos) << message;
  }
  rfa::test::barrier_idle(MPI_COMM_WORLD);
  {
    Staged s(0.3);
    std::unique_ptr<Communicator> half = s.comm->split(0, world_rank());
    s.device->stall_copies(true, false);  // the sibling device was made before: it still copies
    std::vector<char> send(64, 2), recv(64, 0);
    half->start_ring_exchange(send.data(), recv.data(), send.size()).wait();
    std::unique_ptr<Communicator> stalled = s.comm->split(0, world_rank());  // its device stalls
    const auto start = std::chrono::steady_clock::now();
    rfa::comm::testing::expect_error(
        RFA_ERROR_TIMEOUT, [&] { stalled->start_ring_exchange(send.data(), recv.data(), send.size()).wait(); });
    EXPECT_LE(seconds_since(start), 3.0) << "the split did not inherit the copy deadline";
  }
  rfa::test::barrier_idle(MPI_COMM_WORLD);
}

}  // namespace
}  // namespace rfa::comm
