// SPDX-License-Identifier: BSD-3-Clause
// Every strategy through the engine's interface (make_strategy), its passes given copies of the
// tensors in a memory space of their own (strategy_in_space.hpp, the adapter the device suite
// runs the CUDA passes through), against the float64 reference: here in HostSpace, so that the
// adapter is compiled and run in every build.
#include <string>

#include "engine/attention_strategy.hpp"
#include "strategy_case.hpp"
#include "strategy_in_space.hpp"

namespace rfa {
namespace test {
namespace {

TEST(StrategyInterface, EveryStrategyMatchesTheReferenceOnCopiesInItsSpace) {
  auto comm = world_ring();
  const int P = comm->size();
  for (engine::StrategyKind kind : {engine::StrategyKind::ring, engine::StrategyKind::ulysses,
                                    engine::StrategyKind::allgather, engine::StrategyKind::hybrid}) {
    SCOPED_TRACE(engine::strategy_name(kind));
    engine::StrategyChoice choice;
    choice.kind = kind;
    if (kind == engine::StrategyKind::hybrid) choice.ulysses_degree = P == 4 ? 2 : P;
    const engine::AttentionConfig cfg =
        strategy_config({RFA_LAYOUT_ZIGZAG, RFA_MASK_CAUSAL, 4, 15, packed_documents()}, RFA_DTYPE_FLOAT32);
    auto attn = engine::make_strategy(*comm, cfg, choice);
    PassesInSpace<Kokkos::HostSpace> in_space(*attn);
    expect_matches_reference<float>(run_attention<float>(in_space, cfg, 97531));
  }
}

}  // namespace
}  // namespace test
}  // namespace rfa
