// SPDX-License-Identifier: BSD-3-Clause
// Ulysses (the hybrid grid of one ring group) against the float64 reference of the whole
// sequence (strategy_case.hpp's cases, every dtype), on however many ranks mpiexec started.
#include "engine/hybrid_attention.hpp"
#include "strategy_case.hpp"

namespace rfa {
namespace test {
namespace {

const engine::StrategyChoice kUlysses{engine::StrategyKind::ulysses, 0, 1};

class UlyssesAttentionTest : public ::testing::TestWithParam<StrategySpec> {
 protected:
  template <class T>
  void check() {
    auto comm = world_ring();
    const auto cfg = strategy_config(GetParam(), dtype_of<T>::value);
    engine::HybridAttention attn(*comm, cfg, kUlysses);
    expect_matches_reference<T>(run_attention<T>(attn, cfg, 4321));
  }
};

TEST_P(UlyssesAttentionTest, Float32) { check<float>(); }
TEST_P(UlyssesAttentionTest, BFloat16) { check<bf16_t>(); }
TEST_P(UlyssesAttentionTest, Float16) { check<fp16_t>(); }

INSTANTIATE_TEST_SUITE_P(Layouts, UlyssesAttentionTest, ::testing::ValuesIn(strategy_specs()), strategy_spec_name);

// Each rank receives exactly the K/V heads its query heads read: counted on the wire.
TEST(UlyssesAttention, SendsEachRankOnlyTheKvHeadsItNeeds) {
  auto comm = world_ring();
  const int P = comm->size();
  const auto cfg = strategy_config({RFA_LAYOUT_ZIGZAG, RFA_MASK_CAUSAL, 1}, RFA_DTYPE_FLOAT32);
  engine::HybridAttention attn(*comm, cfg, kUlysses);
  const std::int64_t L = attn.local_seq(), B = cfg.batch, D = cfg.head_dim;
  Tensor4<float> q("q", B, L, cfg.heads, D), kv("kv", B, L, 1, D), out("out", B, L, cfg.heads, D);
  Tensor3<float> lse("lse", B, cfg.heads, L);
  Kokkos::deep_copy(q, 0.5f);
  Kokkos::deep_copy(kv, 0.25f);
  attn.forward(engine::HostForward<float>{q, kv, kv, out, lse});
  // To each other rank: q (H/P heads), K and V (one head each: MQA), out back (H/P), lse back.
  const std::int64_t hp = cfg.heads / P;
  const std::int64_t per_peer = 4 * (B * L * hp * D + 2 * B * L * D + B * L * hp * D + B * hp * L);
  EXPECT_EQ(attn.last_timings().bytes_sent, (P - 1) * per_peer);
}

// The attention in between is the ring of one rank: one step, which writes the 16-bit out
// directly and the gradients into the fp32 buffers the all-to-all sends home, so Ulysses holds
// no fp32 accumulator of its own beyond those (the formula of engine/hybrid_attention.hpp,
// written out here for multi-head attention, where g = q).
TEST(UlyssesAttention, HoldsNoAccumulatorsBeyondItsExchanges) {
  auto comm = world_ring();
  const auto cfg = strategy_config({RFA_LAYOUT_ZIGZAG, RFA_MASK_CAUSAL, 12}, RFA_DTYPE_BFLOAT16);
  ASSERT_EQ(cfg.kv_heads, cfg.heads);
  engine::HybridAttention attn(*comm, cfg, kUlysses);
  const int P = comm->size();
  const std::int64_t E = 2, L = attn.local_seq(), B = cfg.batch, D = cfg.head_dim, H = cfg.heads;
  const std::int64_t q = B * L * H * D, kvs = B * cfg.seq_total * (H / P) * D, rows = B * H * L;
  const std::int64_t fwd = E * (2 * q + q + 2 * kvs + q) + 4 * 3 * rows;
  const std::int64_t bwd = E * (2 * q + 3 * q + 2 * kvs) + 4 * (q + 2 * kvs + 2 * q + 2 * q + 3 * rows + rows);
  EXPECT_EQ(attn.workspace_bytes(false) - attn.kernel_workspace_bytes(false), fwd);
  EXPECT_EQ(attn.workspace_bytes(true) - attn.kernel_workspace_bytes(true), bwd);
}

TEST(UlyssesAttention, RejectsHeadsNotDivisibleByTheDegreeOnEveryRank) {
  auto comm = world_ring();
  if (comm->size() == 1) GTEST_SKIP() << "every head count divides by 1";
  engine::AttentionConfig cfg = strategy_config({RFA_LAYOUT_CONTIGUOUS, RFA_MASK_NONE, 1}, RFA_DTYPE_FLOAT32);
  cfg.heads = cfg.kv_heads = comm->size() + 1;  // never a multiple of P >= 2
  try {
    engine::HybridAttention attn(*comm, cfg, kUlysses);
    ADD_FAILURE() << "accepted " << cfg.heads << " heads on " << comm->size() << " ranks";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), RFA_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("not a multiple of the Ulysses degree"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace test
}  // namespace rfa
