// SPDX-License-Identifier: BSD-3-Clause
// The needed-only exchange against the float64 reference of the whole sequence
// (strategy_case.hpp's cases, every dtype), the bytes it sends (exactly the rows of the plan,
// K/V forward, K/V and the fp32 dK/dV backward), and its refusal of CUDA contexts.
#include "engine/needed_kv_attention.hpp"
#include <memory>
#include <vector>

#include "core/mask_ranges.hpp"
#include "engine/attention_strategy.hpp"
#include "engine/needed_kv_plan.hpp"
#include "strategy_case.hpp"

namespace rfa {
namespace test {
namespace {

class NeededKvAttentionTest : public ::testing::TestWithParam<StrategySpec> {
 protected:
  template <class T>
  void check() {
    auto comm = world_ring();
    const auto cfg = strategy_config(GetParam(), dtype_of<T>::value);
    engine::NeededKvAttention attn(*comm, cfg);
    expect_matches_reference<T>(run_attention<T>(attn, cfg, 4321));
  }
};

TEST_P(NeededKvAttentionTest, Float32) { check<float>(); }
TEST_P(NeededKvAttentionTest, BFloat16) { check<bf16_t>(); }
TEST_P(NeededKvAttentionTest, Float16) { check<fp16_t>(); }

INSTANTIATE_TEST_SUITE_P(Layouts, NeededKvAttentionTest, ::testing::ValuesIn(strategy_specs()), strategy_spec_name);

// Each round sends the rows the plan names, K and V forward; the backward sends them again and
// returns the received rows' dK and dV in fp32. Under a window of one chunk on the contiguous
// layout a rank needs only its upstream neighbour's last rows: one round, far fewer bytes than
// a ring's block.
TEST(NeededKvAttention, SendsExactlyThePlannedRows) {
  auto comm = world_ring();
  const int P = comm->size(), me = comm->rank();
  auto cfg = strategy_config({RFA_LAYOUT_CONTIGUOUS, RFA_MASK_CAUSAL, 4, 7}, RFA_DTYPE_BFLOAT16);
  engine::NeededKvAttention attn(*comm, cfg);
  const std::int64_t L = attn.local_seq(), B = cfg.batch, D = cfg.head_dim, H = cfg.heads, HKV = cfg.kv_heads;
  std::int64_t sent = 0, received = 0;
  for (const engine::NeededRound& r : attn.rounds()) {
    sent += r.send.rows;
    received += r.receive.rows;
  }
  EXPECT_EQ(int(attn.rounds().size()), P > 1 ? 1 : 0);
  EXPECT_EQ(sent, me + 1 < P ? 6 : 0);  // the 6 rows a window of 7 reaches back
  EXPECT_EQ(received, me > 0 ? 6 : 0);
  Tensor4<bf16_t> q("q", B, L, H, D), kv("kv", B, L, HKV, D), out("out", B, L, H, D), dq("dq", B, L, H, D),
      dk("dk", B, L, HKV, D), dv("dv", B, L, HKV, D);
  Tensor3<float> lse("lse", B, H, L);
  attn.forward(engine::HostForward<bf16_t>{q, kv, kv, out, lse});
  const std::int64_t row = B * HKV * 2 * D;  // one K and one V row over the batch
  EXPECT_EQ(attn.last_timings().bytes_sent, sent * row * std::int64_t(sizeof(bf16_t)));
  attn.backward(engine::HostBackward<bf16_t>{q, kv, kv, out, out, lse, dq, dk, dv});
  EXPECT_EQ(attn.last_timings().bytes_sent, sent * row * std::int64_t(sizeof(bf16_t)) + received * row * 4);
}

// Rows that travel in several pieces (more than eight runs from one owner): each rank's queries
// see their own block and every third of the upstream rank's first 28 rows, ten single rows no
// gap filling joins, in two pieces; two batch entries, so each piece's [B][rows] layout counts.
TEST(NeededKvAttention, RowsInSeveralPiecesMatchTheReference) {
  auto comm = world_ring();
  const std::int64_t P = comm->size(), L = 32;
  auto cfg = strategy_config({RFA_LAYOUT_CONTIGUOUS, RFA_MASK_NONE, 4}, RFA_DTYPE_FLOAT32);
  cfg.seq_total = P * L;
  cfg.mask = RFA_MASK_RANGES;
  std::vector<rfa_mask_range_t> list;
  for (std::int64_t r = 0; r < P; ++r) {
    list.push_back({r * L, (r + 1) * L, r * L, (r + 1) * L, 0, 0, RFA_RANGE_FULL});
    if (r > 0)
      for (std::int64_t key = 0; key < 28; key += 3)
        list.push_back({r * L, (r + 1) * L, (r - 1) * L + key, (r - 1) * L + key + 1, 0, 0, RFA_RANGE_FULL});
  }
  cfg.ranges = std::make_shared<const MaskRanges>(list.data(), std::int64_t(list.size()), cfg.seq_total, "ranges");
  // V's head dim that of Q and K, then narrower (MLA's shape), then wider: each piece's V rows
  // placed at V's own offsets.
  for (const std::int64_t value_dim : {std::int64_t(0), cfg.head_dim / 2, 2 * cfg.head_dim}) {
    SCOPED_TRACE("value head dim " + std::to_string(value_dim));
    cfg.value_dim = value_dim;
    engine::NeededKvAttention attn(*comm, cfg);
    for (const engine::NeededRound& r : attn.rounds()) {
      EXPECT_EQ(r.receive.rows, comm->rank() > 0 && r.distance == 1 ? 10 : 0);
      EXPECT_EQ(r.receive.pieces.size(), comm->rank() > 0 && r.distance == 1 ? 2u : 0u);
    }
    for (std::uint64_t seed : {11u, 12u}) {
      SCOPED_TRACE("seed " + std::to_string(seed));
      expect_matches_reference<float>(run_attention<float>(attn, cfg, seed));
    }
  }
}

// Host contexts only: the same verdict on every rank, before anything is allocated.
TEST(NeededKvAttention, RefusesCudaContexts) {
  engine::AttentionConfig cfg = strategy_config({RFA_LAYOUT_ZIGZAG, RFA_MASK_CAUSAL, 4}, RFA_DTYPE_BFLOAT16);
  cfg.device = engine::Device::cuda;
  cfg.head_dim = 64;
  try {
    engine::validate_strategy({engine::StrategyKind::needed, 0, 1}, cfg, 2);
    ADD_FAILURE() << "a CUDA context was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), RFA_ERROR_UNSUPPORTED);
    EXPECT_NE(std::string(e.what()).find("host contexts only"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace test
}  // namespace rfa
