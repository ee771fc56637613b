// SPDX-License-Identifier: BSD-3-Clause
#include "auto_strategy.hpp"

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <vector>

#include "collective/agree_on_failure.hpp"
#include "collective/bounded_collectives.hpp"
#include "core/enum_value.hpp"
#include "model/plan.hpp"
#include "options.hpp"

namespace rfa {
namespace capi {
namespace {

/// This rank's choice, from what every rank has alike.
void choose(int threads, const topology::RingOrder& order, int ranks, rfa_context_s& context) {
  rfa_options_t& o = context.options;
  const std::vector<model::Plan> plans =
      model::automatic_plans(ring_config(o), ranks, threads, topology::most_ranks_on_one_host(order));
  const model::Plan& best = plans.front();
  switch (best.choice.kind) {
    case engine::StrategyKind::ring: o.strategy = RFA_STRATEGY_RING; break;
    case engine::StrategyKind::ulysses: o.strategy = RFA_STRATEGY_ULYSSES; break;
    case engine::StrategyKind::allgather: o.strategy = RFA_STRATEGY_ALLGATHER; break;
    case engine::StrategyKind::hybrid: o.strategy = RFA_STRATEGY_HYBRID; break;
  }
  o.ulysses_degree = best.choice.kind == engine::StrategyKind::hybrid ? best.choice.ulysses_degree : 0;
  o.layout = best.layout;
  context.plan = "automatic: " + model::explain_plans(plans);
}

}  // namespace

void resolve_strategy(MPI_Comm comm, const topology::RingOrder& order, int ranks, rfa_context_s& context) {
  const rfa_options_t& o = context.options;
  if (enum_value(o.strategy) != RFA_STRATEGY_AUTO) {
    const model::Plan chosen{strategy_choice(o), o.layout, ranks, {}};
    context.plan = chosen.name() + ": chosen by the caller (options.strategy)";
    return;
  }
  int threads = Kokkos::DefaultHostExecutionSpace().concurrency();
  collective::allreduce_within(comm, &threads, 1, MPI_INT, MPI_MIN, "the automatic strategy's host threads");
  // A variable that does not parse on one rank fails every rank, with that rank's message.
  collective::agree_on_failure(comm, [&] { choose(threads, order, ranks, context); });
}

}  // namespace capi
}  // namespace rfa
