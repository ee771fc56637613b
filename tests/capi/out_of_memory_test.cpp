// SPDX-License-Identifier: BSD-3-Clause
// Sizes no machine can hold, through the C API: an engine buffer the allocator refuses is
// RFA_ERROR_OUT_OF_MEMORY on every rank, naming the buffer and its bytes, and the context
// stays usable; a local shape Kokkos' Views cannot index is refused at creation. The caller's
// tensors are address space without memory behind it (nothing reads them: the call fails
// before any kernel runs).
#include <gtest/gtest.h>

#include <cstdint>
#include <regex>
#include <string>

#include "capi_test_support.hpp"
#include "rfa/rfa_mpi.h"
#include "unbacked_memory.hpp"

namespace {

using namespace rfa_capi_test;
using rfa::test::Unbacked;

// 2^30 rows per rank, 16 heads of 64, bf16: 2 TiB per local q/k/v/out; the engine's first
// receive buffer asks for as much again, which no test machine grants.
constexpr std::int64_t kRows = std::int64_t(1) << 30, kHeads = 16, kDim = 64;
constexpr std::size_t kTensorBytes = std::size_t(kRows * kHeads * kDim) * 2;
constexpr std::size_t kLseBytes = std::size_t(kRows * kHeads) * 4;

rfa_options_t huge_options() {
  rfa_options_t o;
  rfa_options_init(&o);
  o.layout = RFA_LAYOUT_CONTIGUOUS;
  o.mask = RFA_MASK_CAUSAL;
  o.dtype = RFA_DTYPE_BFLOAT16;
  o.ring_order = RFA_RING_ORDER_IDENTITY;
  o.batch = 1;
  o.seq_total = kRows * world_size();
  o.heads = kHeads;
  o.kv_heads = kHeads;
  o.head_dim = kDim;
  return o;
}

// Where Views compute offsets in the indices' type (Kokkos 5), a local tensor of 2^31 elements
// or more is refused at creation (ViewExtents below checks how), so no allocation is attempted;
// a smaller one is not sure to be refused. True, with the reason, when creation said so.
bool refused_as_too_large_for_views(rfa_result_t created) {
  return created == RFA_ERROR_UNSUPPORTED &&
         std::string(rfa_get_last_error_message()).find("holds 2^31 elements or more") != std::string::npos;
}

class OutOfMemory : public ::testing::Test {
 protected:
  void SetUp() override {
    if (rfa::test::overcommit_always()) GTEST_SKIP() << "vm.overcommit_memory = 1 grants any allocation";
    for (Unbacked* t : {&q, &k, &v, &out, &dout, &dq, &dk, &dv, &lse})
      ASSERT_NE(t->data(), nullptr) << "cannot map the test's address space";
    const rfa_options_t o = huge_options();
    const rfa_result_t created = rfa_context_create(MPI_COMM_WORLD, &o, &ctx);
    if (refused_as_too_large_for_views(created)) GTEST_SKIP() << rfa_get_last_error_message();
    ASSERT_RFA_OK(created);
  }
  void TearDown() override {
    if (ctx) {
      EXPECT_EQ(int(rfa_context_destroy(ctx)), int(RFA_SUCCESS));
    }
  }

  // Every rank fails alike: the code, a byte count, a buffer of the engine's by name.
  static void expect_out_of_memory(rfa_result_t got, const char* call) {
    const std::string m = rfa_get_last_error_message();
    EXPECT_EQ(int(got), int(RFA_ERROR_OUT_OF_MEMORY)) << call << ": " << m;
    // The first buffer refused: the K/V receive buffers (2 TiB) where blocks travel, the fp32
    // accumulators (4 TiB) of one rank's backward, which has no receive buffers.
    EXPECT_TRUE(std::regex_search(m, std::regex("cannot allocate (2199023255552 bytes \\(2\\.0|4398046511104 bytes "
                                                "\\(4\\.0) TiB\\) for 'rfa::")))
        << m;
    EXPECT_NE(m.find("in all on this rank"), std::string::npos) << m;
  }

  Unbacked q{kTensorBytes}, k{kTensorBytes}, v{kTensorBytes}, out{kTensorBytes}, dout{kTensorBytes}, dq{kTensorBytes},
      dk{kTensorBytes}, dv{kTensorBytes}, lse{kLseBytes};
  rfa_context_t ctx = nullptr;
};

TEST_F(OutOfMemory, ForwardFailsOnEveryRankWithTheBufferAndItsBytes) {
  // One rank's forward is one block written straight into out: it allocates nothing of the
  // tensors' size, so nothing is refused and the kernel would run over the unbacked tensors.
  if (world_size() == 1) GTEST_SKIP() << "a one-rank forward holds no buffer of the tensors' size";
  auto* lse_f = static_cast<float*>(lse.data());
  expect_out_of_memory(rfa_forward(ctx, q.data(), k.data(), v.data(), out.data(), lse_f), "rfa_forward");
  // The context is still usable (nothing moved): a second call fails the same way, no hang.
  expect_out_of_memory(rfa_forward(ctx, q.data(), k.data(), v.data(), out.data(), lse_f), "rfa_forward");
}

TEST_F(OutOfMemory, BackwardFailsOnEveryRankWithTheBufferAndItsBytes) {
  expect_out_of_memory(rfa_backward(ctx, q.data(), k.data(), v.data(), out.data(), dout.data(),
                                    static_cast<const float*>(lse.data()), dq.data(), dk.data(), dv.data()),
                       "rfa_backward");
}

// The other strategies allocate their own buffers (whole-sequence heads, gathered chunks,
// the hybrid's groups and its inner ring): the same contract.
TEST(OutOfMemoryStrategies, EveryStrategyFailsOnEveryRank) {
  if (rfa::test::overcommit_always()) GTEST_SKIP() << "vm.overcommit_memory = 1 grants any allocation";
  Unbacked q{kTensorBytes}, k{kTensorBytes}, v{kTensorBytes}, out{kTensorBytes}, lse{kLseBytes};
  ASSERT_TRUE(q.data() && k.data() && v.data() && out.data() && lse.data());
  const struct {
    rfa_strategy_t strategy;
    int32_t degree;
    const char* name;
  } cases[] = {{RFA_STRATEGY_ULYSSES, 0, "ulysses"},
               {RFA_STRATEGY_ALLGATHER, 0, "allgather"},
               {RFA_STRATEGY_HYBRID, world_size(), "hybrid"}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    rfa_options_t o = huge_options();
    o.strategy = c.strategy;
    o.ulysses_degree = c.degree;
    rfa_context_t ctx = nullptr;
    const rfa_result_t created = rfa_context_create(MPI_COMM_WORLD, &o, &ctx);
    if (refused_as_too_large_for_views(created)) GTEST_SKIP() << rfa_get_last_error_message();
    ASSERT_RFA_OK(created);
    EXPECT_RFA_FAILS(RFA_ERROR_OUT_OF_MEMORY,
                     rfa_forward(ctx, q.data(), k.data(), v.data(), out.data(), static_cast<float*>(lse.data())),
                     "cannot allocate ", " for 'rfa::", "in all on this rank");
    EXPECT_EQ(int(rfa_context_destroy(ctx)), int(RFA_SUCCESS));
  }
}

// 2^32 rows on each rank: an extent no Kokkos rfa builds against indexes (3.4 and 4.x hold
// extents in 32 bits, 5.x offsets in the indices' type; core's ViewLimits test holds
// require_view_extents to refusing this shape on every one). Refused at creation, on every rank.
TEST(ViewExtents, LocalRowsPast2To32AreRefusedAtCreationOnEveryRank) {
  rfa_options_t o = huge_options();
  o.seq_total = (std::int64_t(1) << 32) * world_size();
  o.heads = o.kv_heads = 1;
  rfa_context_t ctx = nullptr;
  const rfa_result_t r = rfa_context_create(MPI_COMM_WORLD, &o, &ctx);
  if (r == RFA_SUCCESS) {
    ADD_FAILURE() << "a context of 2^32 rows a rank was created";
    EXPECT_EQ(int(rfa_context_destroy(ctx)), int(RFA_SUCCESS));
    return;
  }
  const std::string m = rfa_get_last_error_message();
  EXPECT_EQ(int(r), int(RFA_ERROR_UNSUPPORTED)) << m;
  EXPECT_NE(m.find("tensor 'q' of shape [1,4294967296,1,64]"), std::string::npos) << m;
  EXPECT_EQ(ctx, nullptr);
}

}  // namespace
