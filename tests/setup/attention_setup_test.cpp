// SPDX-License-Identifier: BSD-3-Clause
// Setting up a ring (setup/attention_setup.hpp) on 1, 2 and 4 ranks: the caller's strategy or the
// model's plan, the same on every rank; the engine and communicator it returns run a pass; a
// strategy that cannot run the problem fails on every rank with the reason.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdint>
#include <string>

#include "core/error.hpp"
#include "kernels/flash_attention.hpp"
#include "layout/sequence_layout.hpp"
#include "mpi_test_support.hpp"
#include "setup/attention_setup.hpp"
#include "small_request.hpp"

namespace rfa::setup {
namespace {

int world_size() {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

SetupRequest request() { return small_request(); }

TEST(AttentionSetup, TheCallersStrategyWithItsCommunicatorAndOrder) {
  SetupRequest r = request();
  r.strategy = {engine::StrategyKind::allgather, 0, 1};
  const AttentionSetup s = set_up_attention(MPI_COMM_WORLD, r);
  ASSERT_TRUE(s.comm && s.engine);
  EXPECT_EQ(s.comm->size(), world_size());
  EXPECT_EQ(s.comm->rank(), s.order.position);
  EXPECT_EQ(int(s.order.order.size()), world_size());
  EXPECT_EQ(s.engine->kind(), engine::StrategyKind::allgather);
  EXPECT_EQ(s.engine->position(), s.order.position);
  EXPECT_EQ(s.config.layout, RFA_LAYOUT_ZIGZAG);
  EXPECT_EQ(s.plan, "allgather, zigzag: chosen by the test") << s.plan;
}

// The strategy a caller names runs with the chunk its device takes, and the plan text says so:
// on a CUDA context the all-gather of a short slice gathers several K/V heads at once.
TEST(AttentionSetup, TheCallersAllGatherNamesItsDeviceChunk) {
  SetupRequest r = request();
  r.strategy = {engine::StrategyKind::allgather, 0, 1};
  r.config.device = engine::Device::cuda;
  r.config.seq_total = 32768;
  r.config.heads = r.config.kv_heads = 16;
  r.config.head_dim = 128;
  r.config.dtype = RFA_DTYPE_BFLOAT16;
  const ExplicitStrategy on_device = explicit_strategy(r, r.config, 4);
  EXPECT_EQ(on_device.strategy.kind, engine::StrategyKind::allgather);
  EXPECT_EQ(on_device.strategy.kv_heads_per_chunk, 8);
  EXPECT_EQ(on_device.plan, "allgather (8 K/V heads a chunk), zigzag: chosen by the test") << on_device.plan;
  r.config.device = engine::Device::host;
  const ExplicitStrategy on_host = explicit_strategy(r, r.config, 4);
  EXPECT_EQ(on_host.strategy.kv_heads_per_chunk, 1);
  EXPECT_EQ(on_host.plan, "allgather, zigzag: chosen by the test") << on_host.plan;
  r.config.device = engine::Device::cuda;
  r.strategy = {engine::StrategyKind::ring, 0, 1};
  EXPECT_EQ(explicit_strategy(r, r.config, 4).plan, "ring, zigzag: chosen by the test");
}

TEST(AttentionSetup, AutomaticIsThePlanOnEveryRankAndRuns) {
  SetupRequest r = request();
  r.automatic_strategy = true;
  r.config.layout = RFA_LAYOUT_STRIPE;  // not kept: the plan says the layout
  AttentionSetup s = set_up_attention(MPI_COMM_WORLD, r);
  ASSERT_TRUE(s.engine);
  EXPECT_EQ(s.plan.rfind("automatic: ", 0), 0u) << s.plan;
  EXPECT_EQ(s.engine->kind(), s.strategy.kind);
  EXPECT_EQ(s.engine->config().layout, s.config.layout);
  EXPECT_TRUE(rfa::test::same_on_every_rank(std::int64_t(s.strategy.kind)));
  EXPECT_TRUE(rfa::test::same_on_every_rank(s.strategy.ulysses_degree));
  EXPECT_TRUE(rfa::test::same_on_every_rank(std::int64_t(s.config.layout)));
  // The engine runs on the communicator it came with.
  const engine::AttentionConfig& c = s.config;
  const std::int64_t L = s.engine->local_seq();
  kernels::Tensor4<float> q("q", c.batch, L, c.heads, c.head_dim), kv("kv", c.batch, L, c.kv_heads, c.head_dim);
  kernels::Tensor4<float> out("out", c.batch, L, c.heads, c.head_dim);
  kernels::Tensor3<float> lse("lse", c.batch, c.heads, L);
  Kokkos::deep_copy(q, 0.5f);
  Kokkos::deep_copy(kv, 0.25f);
  s.engine->forward<float>(q, kv, kv, out, lse);
  // Every key has the same value: every output is that value.
  EXPECT_FLOAT_EQ(out(0, L - 1, c.heads - 1, c.head_dim - 1), 0.25f);
}

TEST(AttentionSetup, AStrategyThatCannotRunFailsEveryRank) {
  if (world_size() == 1) GTEST_SKIP() << "every grid fits one rank";
  SetupRequest r = request();
  r.strategy = {engine::StrategyKind::hybrid, world_size() + 1, 1};  // never divides P
  try {
    set_up_attention(MPI_COMM_WORLD, r);
    ADD_FAILURE() << "set up a hybrid of degree " << world_size() + 1 << " on " << world_size() << " ranks";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), RFA_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("ulysses_degree"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace rfa::setup
