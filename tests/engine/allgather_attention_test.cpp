// SPDX-License-Identifier: BSD-3-Clause
// KV all-gather against the float64 reference of the whole sequence (strategy_case.hpp's
// cases, every dtype), with one K/V head per chunk (several chunks, so the gather of the next
// chunk is in flight while one is computed), with all K/V heads in one chunk, and (fp32) with
// two K/V heads a chunk where the heads make more than one such chunk.
#include <type_traits>
#include <vector>

#include "engine/allgather_attention.hpp"
#include "engine/attention_strategy.hpp"
#include "strategy_case.hpp"

namespace rfa {
namespace test {
namespace {

class AllGatherAttentionTest : public ::testing::TestWithParam<StrategySpec> {
 protected:
  template <class T>
  void check() {
    auto comm = world_ring();
    const auto cfg = strategy_config(GetParam(), dtype_of<T>::value);
    std::vector<std::int64_t> chunks{1, cfg.kv_heads};
    // Chunks of two K/V heads where that is neither extreme: chunk c starts at head 2c. One
    // dtype: the packing is the same for each.
    if (std::is_same<T, float>::value && cfg.kv_heads > 2 && cfg.kv_heads % 2 == 0) chunks.push_back(2);
    for (std::int64_t chunk : chunks) {
      SCOPED_TRACE("kv_heads_per_chunk " + std::to_string(chunk));
      engine::AllGatherAttention attn(*comm, cfg, chunk);
      expect_matches_reference<T>(run_attention<T>(attn, cfg, 1234));
    }
  }
};

TEST_P(AllGatherAttentionTest, Float32) { check<float>(); }
TEST_P(AllGatherAttentionTest, BFloat16) { check<bf16_t>(); }
TEST_P(AllGatherAttentionTest, Float16) { check<fp16_t>(); }

INSTANTIATE_TEST_SUITE_P(Layouts, AllGatherAttentionTest, ::testing::ValuesIn(strategy_specs()), strategy_spec_name);

// K and V cross the wire once per other rank; dK and dV come back once, in fp32.
TEST(AllGatherAttention, CountsTheGatheredAndReducedBytes) {
  auto comm = world_ring();
  const std::int64_t P = comm->size();
  const auto cfg = strategy_config({RFA_LAYOUT_STRIPE, RFA_MASK_CAUSAL, 4}, RFA_DTYPE_BFLOAT16);
  engine::AllGatherAttention attn(*comm, cfg, 2);
  const std::int64_t L = attn.local_seq(), B = cfg.batch, D = cfg.head_dim, H = cfg.heads, HKV = cfg.kv_heads;
  Tensor4<bf16_t> q("q", B, L, H, D), kv("kv", B, L, HKV, D), out("out", B, L, H, D), dq("dq", B, L, H, D),
      dk("dk", B, L, HKV, D), dv("dv", B, L, HKV, D);
  Tensor3<float> lse("lse", B, H, L);
  attn.forward(engine::HostForward<bf16_t>{q, kv, kv, out, lse});
  const std::int64_t kv_bytes = 2 * B * L * HKV * D * std::int64_t(sizeof(bf16_t));
  EXPECT_EQ(attn.last_timings().bytes_sent, (P - 1) * kv_bytes);
  EXPECT_EQ(attn.last_timings().steps_computed, 2);
  attn.backward(engine::HostBackward<bf16_t>{q, kv, kv, out, out, lse, dq, dk, dv});
  EXPECT_EQ(attn.last_timings().bytes_sent, (P - 1) * (kv_bytes + 2 * B * L * HKV * D * 4));
}

TEST(AllGatherAttention, RejectsAChunkThatDoesNotDivideTheKvHeads) {
  auto comm = world_ring();
  const auto cfg = strategy_config({RFA_LAYOUT_ZIGZAG, RFA_MASK_CAUSAL, 4}, RFA_DTYPE_FLOAT32);
  try {
    engine::AllGatherAttention attn(*comm, cfg, 3);
    ADD_FAILURE() << "accepted 3 K/V heads per chunk of 4";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), RFA_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("must divide kv_heads"), std::string::npos) << e.what();
  }
}

// On a CUDA context the chunks run on rfa's kernels: an explicit request for cuDNN is refused
// (the same verdict on every rank: no communication) before the device is looked at.
TEST(AllGatherAttention, RefusesCudnnKernelsOnDevices) {
  engine::AttentionConfig cfg = strategy_config({RFA_LAYOUT_ZIGZAG, RFA_MASK_CAUSAL, 4}, RFA_DTYPE_BFLOAT16);
  cfg.device = engine::Device::cuda;
  cfg.head_dim = 64;
  const auto refusal = [&](engine::StrategyKind kind) {
    try {
      engine::validate_strategy({kind, 0, 1}, cfg, 2);
      return std::string();
    } catch (const Error& e) {
      return std::string(e.what());
    }
  };
  cfg.cuda_kernels = engine::CudaKernels::cudnn;
  EXPECT_NE(refusal(engine::StrategyKind::allgather).find("rfa's CUDA kernels, not cuDNN"), std::string::npos);
  EXPECT_EQ(refusal(engine::StrategyKind::ring).find("not cuDNN"), std::string::npos);
  cfg.cuda_kernels = engine::CudaKernels::rfa;
  EXPECT_EQ(refusal(engine::StrategyKind::allgather).find("not cuDNN"), std::string::npos);
}

}  // namespace
}  // namespace test
}  // namespace rfa
