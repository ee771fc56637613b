// SPDX-License-Identifier: BSD-3-Clause
// The kernels' own buffers (their head-major fp32 copies of K/V or Q/dO, kernels::ForwardWorkspace
// and BackwardWorkspace) refused
// on one rank only, as on a node whose `ulimit -v` is lower or whose memory is nearly full: the
// engine must make them before its ranks agree that the call may go on, so every rank fails
// with RFA_ERROR_OUT_OF_MEMORY, none waits in the ring for a neighbour that has left, and no
// rank has sent anything (docs/architecture.md §3, §6.7). The last rank's address space is limited to what the
// engine's own buffers need and a quarter of the kernel's, so the engine's allocations succeed
// and the kernel's K copy is refused. The caller's tensors are address space without memory
// behind it; nothing reads them (the call fails before any kernel runs).
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "allocation_log.hpp"
#include "engine/allgather_attention.hpp"
#include "engine/hybrid_attention.hpp"
#include "engine/needed_kv_attention.hpp"
#include "engine/ring_attention.hpp"
#include "layout/distributed_gather.hpp"
#include "ring_case.hpp"
#include "unbacked_memory.hpp"

#if defined(__SANITIZE_ADDRESS__)
#define RFA_TEST_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RFA_TEST_UNDER_ASAN 1
#endif
#endif

namespace rfa {
namespace test {
namespace {

// A ring step that waited for a rank which had failed would end here rather than at the
// default deadline, so a regression shows as RFA_ERROR_TIMEOUT, not as a hung test.
constexpr double kDeadlineSeconds = 60;

// 12 heads of 64 (divisible by P = 1..4), 2^17 rows per rank, fp32: each kernel copy (K, V, Q or
// dO) is 0.17-0.5 GB per rank, the margin left above the engine's buffers half of that, far
// more than anything else the process maps during a call.
engine::AttentionConfig big_config(int P) {
  engine::AttentionConfig c;
  c.layout = RFA_LAYOUT_CONTIGUOUS;
  c.mask = RFA_MASK_NONE;
  c.dtype = RFA_DTYPE_FLOAT32;
  c.batch = 1;
  c.seq_total = (std::int64_t(1) << 17) * P;
  c.heads = 12;
  c.kv_heads = 12;
  c.head_dim = 64;
  return c;
}

std::int64_t mapped_bytes() {
  std::ifstream status("/proc/self/status");
  std::string key;
  std::int64_t kib = -1;
  while (status >> key) {
    if (key == "VmSize:") {
      status >> kib;
      break;
    }
  }
  return kib * 1024;
}

/// Lowers this process's address-space limit for its lifetime, then restores it.
class AddressSpaceLimit {
 public:
  explicit AddressSpaceLimit(std::int64_t bytes) {
    getrlimit(RLIMIT_AS, &saved_);
    rlimit lowered = saved_;
    lowered.rlim_cur = rlim_t(bytes);
    ok_ = setrlimit(RLIMIT_AS, &lowered) == 0;
  }
  ~AddressSpaceLimit() { setrlimit(RLIMIT_AS, &saved_); }
  bool ok() const { return ok_; }

 private:
  rlimit saved_{};
  bool ok_ = false;
};

/// Runs one forward or backward of `attn` with the last rank's address space limited to
/// `engine_bytes` (the engine's own buffers) and a quarter of `kernel_bytes` (the kernel's)
/// more, and checks that every rank fails together, the last naming the kernel's buffer, with
/// nothing left allocated.
template <class Strategy>
void expect_refusal_everywhere(comm::Communicator& ring, Strategy& attn, bool backward, std::int64_t engine_bytes,
                               std::int64_t kernel_bytes) {
  SCOPED_TRACE(backward ? "backward" : "forward");
  const engine::AttentionConfig& c = attn.config();
  const std::int64_t L = attn.local_seq(), B = c.batch, H = c.heads, HKV = c.kv_heads, D = c.head_dim;
  const std::size_t q_bytes = std::size_t(B * L * H * D) * 4, kv_bytes = std::size_t(B * L * HKV * D) * 4;
  Unbacked q_mem(q_bytes), k_mem(kv_bytes), v_mem(kv_bytes), out_mem(q_bytes), lse_mem(std::size_t(B * H * L) * 4),
      dout_mem(q_bytes), dq_mem(q_bytes), dk_mem(kv_bytes), dv_mem(kv_bytes);
  for (const Unbacked* m : {&q_mem, &k_mem, &v_mem, &out_mem, &lse_mem, &dout_mem, &dq_mem, &dk_mem, &dv_mem})
    ASSERT_NE(m->data(), nullptr) << "cannot map the test's address space";
  auto tensor = [&](const Unbacked& m, std::int64_t heads) {
    return Tensor4<float>(static_cast<float*>(m.data()), B, L, heads, D);
  };
  Tensor3<float> lse(static_cast<float*>(lse_mem.data()), B, H, L);

  const bool limited = ring.rank() == ring.size() - 1;
  for (int attempt = 0; attempt < 2; ++attempt) {  // the second: nothing was lost or left in flight
    SCOPED_TRACE("attempt " + std::to_string(attempt));
    std::unique_ptr<AddressSpaceLimit> limit;
    if (limited) {
      limit = std::make_unique<AddressSpaceLimit>(mapped_bytes() + engine_bytes + kernel_bytes / 4);
      ASSERT_TRUE(limit->ok()) << "setrlimit(RLIMIT_AS) failed";
    }
    std::string message;
    rfa_result_t code = RFA_SUCCESS;
    const AllocationLog log = log_allocations([&] {
      try {
        if (backward) {
          attn.backward(engine::HostBackward<float>{tensor(q_mem, H), tensor(k_mem, HKV), tensor(v_mem, HKV),
                                                    tensor(out_mem, H), tensor(dout_mem, H), lse, tensor(dq_mem, H),
                                                    tensor(dk_mem, HKV), tensor(dv_mem, HKV)});
        } else {
          attn.forward(engine::HostForward<float>{tensor(q_mem, H), tensor(k_mem, HKV), tensor(v_mem, HKV),
                                                  tensor(out_mem, H), lse});
        }
      } catch (const Error& e) {
        code = e.code();
        message = e.what();
      }
    });
    limit.reset();
    EXPECT_EQ(int(code), int(RFA_ERROR_OUT_OF_MEMORY)) << "rank " << ring.rank() << ": " << message;
    const std::string expected = limited ? "for 'rfa::head_major_" : "lowest failing ring position";
    EXPECT_NE(message.find(expected), std::string::npos) << message;
    if (limited) {
      EXPECT_NE(message.find("in all on this rank"), std::string::npos) << message;
    }
    EXPECT_EQ(log.live, 0) << "the failed call kept memory";
    // Refused before anything moved: the hybrid's and Ulysses' head exchange waits for the
    // inner ring's buffers to be agreed, as the ring's and the all-gather's first step does.
    EXPECT_EQ(attn.last_timings().bytes_sent, 0) << "rank " << ring.rank() << " sent data before the refusal";
  }
}

class RefusedKernelBuffers : public ::testing::Test {
 protected:
  void SetUp() override {
#ifdef RFA_TEST_UNDER_ASAN
    GTEST_SKIP() << "AddressSanitizer reserves terabytes of address space: RLIMIT_AS cannot model a full node";
#endif
    ring = comm::make_mpi_communicator(MPI_COMM_WORLD, world_rank(), kDeadlineSeconds);
  }
  std::unique_ptr<comm::Communicator> ring;
};

// Both passes of `attn`, each with its kernel's buffers refused on the last rank.
template <class Strategy>
void expect_refusals(comm::Communicator& ring, Strategy& attn) {
  for (bool backward : {false, true}) {
    const std::int64_t kernel = attn.kernel_workspace_bytes(backward);
    ASSERT_GT(kernel, std::int64_t(1) << 28) << "the shape no longer makes the kernel's buffers large";
    expect_refusal_everywhere(ring, attn, backward, attn.workspace_bytes(backward) - kernel, kernel);
  }
}

TEST_F(RefusedKernelBuffers, RingFailsOnEveryRank) {
  engine::RingAttention attn(*ring, big_config(ring->size()));
  expect_refusals(*ring, attn);
}

TEST_F(RefusedKernelBuffers, UlyssesFailsOnEveryRank) {
  engine::HybridAttention attn(*ring, big_config(ring->size()), {engine::StrategyKind::ulysses, 0, 1});
  expect_refusals(*ring, attn);
}

TEST_F(RefusedKernelBuffers, HybridFailsOnEveryRankBeforeAnyGroupComputes) {
  // Rings of P/Pu ranks (Pu = P/2 on an even count): only an agreement over all P ranks stops
  // the ring groups whose buffers fit from computing their whole ring.
  const int P = ring->size(), degree = P % 2 == 0 ? P / 2 : P;
  engine::HybridAttention attn(*ring, big_config(P), {engine::StrategyKind::hybrid, degree, 1});
  expect_refusals(*ring, attn);
}

TEST_F(RefusedKernelBuffers, AllGatherFailsOnEveryRank) {
  // K/V heads gathered 12 / P at a time: the kernel's copy is as large as the ring's.
  engine::AllGatherAttention attn(*ring, big_config(ring->size()), 12 / ring->size());
  expect_refusals(*ring, attn);
}

TEST_F(RefusedKernelBuffers, NeededOnlyExchangeFailsOnEveryRank) {
  // Without a mask every rank needs every block: on several ranks two rounds' K/V buffers are
  // the engine's, the kernel's copy as large as the ring's.
  engine::NeededKvAttention attn(*ring, big_config(ring->size()));
  expect_refusals(*ring, attn);
}

// The sharding helpers' all-gather (rfa_allgather_bshd) stages every rank's shard, as much memory
// as the whole tensor: refused on the last rank, every rank fails with RFA_ERROR_OUT_OF_MEMORY
// before anything moves, none waiting in the all-gather for its deadline.
TEST_F(RefusedKernelBuffers, ShardAllGatherFailsOnEveryRank) {
  const int P = ring->size();
  const layout::BshdDims dims{1, 12, 64};
  const std::int64_t rows = std::int64_t(1) << 14, whole_bytes = rows * P * dims.heads * dims.head_dim * 4;
  std::vector<float> local(std::size_t(rows * dims.heads * dims.head_dim), 1.0f);
  Unbacked global{std::size_t(whole_bytes)};
  ASSERT_NE(global.data(), nullptr);
  const bool limited = ring->rank() == P - 1;
  std::unique_ptr<AddressSpaceLimit> limit;
  if (limited) {
    limit = std::make_unique<AddressSpaceLimit>(mapped_bytes() + whole_bytes / 2);
    ASSERT_TRUE(limit->ok()) << "setrlimit(RLIMIT_AS) failed";
  }
  const auto start = std::chrono::steady_clock::now();
  rfa_result_t code = RFA_SUCCESS;
  std::string message;
  try {
    layout::allgather_bshd(*ring, RFA_LAYOUT_CONTIGUOUS, local.data(), dims, static_cast<float*>(global.data()),
                           rows * P);
  } catch (const Error& e) {
    code = e.code();
    message = e.what();
  }
  limit.reset();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(int(code), int(RFA_ERROR_OUT_OF_MEMORY)) << message;
  if (limited) {
    EXPECT_NE(message.find("could not stage every rank's shard"), std::string::npos) << message;
  }
  EXPECT_LT(seconds, kDeadlineSeconds / 2) << "a rank waited in the all-gather: " << message;
}

}  // namespace
}  // namespace test
}  // namespace rfa
