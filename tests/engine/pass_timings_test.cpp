// SPDX-License-Identifier: BSD-3-Clause
// Every strategy's pass counts its compute twice (engine/pass_timings.hpp): in wall seconds and
// in the CPU seconds its process used meanwhile, which rfa_run's work balance reads. Both are
// counted in every strategy (the hybrid adds its inner ring's), and the CPU seconds are no more
// than the wall seconds allow for the host execution space's threads.
#include <Kokkos_Core.hpp>

#include "engine/attention_strategy.hpp"
#include "strategy_case.hpp"

namespace rfa {
namespace test {
namespace {

class PassTimingsTest : public ::testing::TestWithParam<engine::StrategyKind> {};

TEST_P(PassTimingsTest, ComputeIsCountedInWallAndCpuSeconds) {
  auto comm = world_ring();
  const int P = comm->size();
  engine::StrategyChoice choice;
  choice.kind = GetParam();
  if (choice.kind == engine::StrategyKind::hybrid) choice.ulysses_degree = P == 4 ? 2 : P;
  auto cfg = strategy_config({RFA_LAYOUT_ZIGZAG, RFA_MASK_CAUSAL, 4}, RFA_DTYPE_FLOAT32);
  cfg.seq_total = 480;  // enough work per rank that its CPU seconds are well above the clock's grain
  auto attn = engine::make_strategy(*comm, cfg, choice);
  const std::int64_t L = attn->local_seq(), B = cfg.batch, H = cfg.heads, HKV = cfg.kv_heads, D = cfg.head_dim;
  Tensor4<float> q("q", B, L, H, D), k("k", B, L, HKV, D), v("v", B, L, HKV, D), out("out", B, L, H, D),
      dout("dout", B, L, H, D), dq("dq", B, L, H, D), dk("dk", B, L, HKV, D), dv("dv", B, L, HKV, D);
  Kokkos::deep_copy(q, 0.5f);
  Kokkos::deep_copy(k, 0.25f);
  Kokkos::deep_copy(v, 1.0f);
  Kokkos::deep_copy(dout, 1.0f);
  Tensor3<float> lse("lse", B, H, L);
  const double threads = Kokkos::DefaultHostExecutionSpace().concurrency();
  for (bool backward : {false, true}) {
    SCOPED_TRACE(backward ? "backward" : "forward");
    if (backward) {
      attn->backward<float>(q, k, v, out, dout, lse, dq, dk, dv);
    } else {
      attn->forward<float>(q, k, v, out, lse);
    }
    const engine::PassTimings& t = attn->last_timings();
    EXPECT_GT(t.compute, 0.0);
    EXPECT_GT(t.compute_cpu, 0.0) << "the pass's compute was not counted in CPU seconds";
    // Another thread of the process (MPI's) may run for a moment inside the compute: a margin.
    EXPECT_LE(t.compute_cpu, 1.1 * threads * t.compute + 2e-3) << "wall " << t.compute << " s";
    EXPECT_LE(t.compute, t.total);
  }
}

std::string kind_name(const ::testing::TestParamInfo<engine::StrategyKind>& info) {
  static const char* const names[] = {"Ring", "Ulysses", "AllGather", "Hybrid", "Needed"};
  return names[int(info.param)];
}

INSTANTIATE_TEST_SUITE_P(Strategies, PassTimingsTest,
                         ::testing::Values(engine::StrategyKind::ring, engine::StrategyKind::ulysses,
                                           engine::StrategyKind::allgather, engine::StrategyKind::hybrid,
                                           engine::StrategyKind::needed),
                         kind_name);

}  // namespace
}  // namespace test
}  // namespace rfa
