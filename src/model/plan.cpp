// SPDX-License-Identifier: BSD-3-Clause
#include "model/plan.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "layout/sequence_layout.hpp"

namespace rfa {
namespace model {
namespace {

double step_seconds(const Plan& p) { return p.prediction.forward.seconds + p.prediction.backward.seconds; }

}  // namespace

std::string Plan::name() const {
  std::string s = engine::strategy_name(choice.kind);
  if (choice.kind == engine::StrategyKind::hybrid)
    s += " " + std::to_string(choice.ulysses_degree) + " x " + std::to_string(ranks / choice.ulysses_degree);
  return s + ", " + layout::layout_name(layout);
}

std::vector<Plan> rank_plans(const engine::RingConfig& config, int ranks, const MachineModel& machine) {
  std::vector<engine::StrategyChoice> choices = {{engine::StrategyKind::ring, 0, 1},
                                                 {engine::StrategyKind::allgather, 0, 1}};
  if (ranks > 1) choices.push_back({engine::StrategyKind::ulysses, 0, 1});
  for (int degree = 2; degree < ranks && degree <= machine.ranks_per_node; ++degree)
    if (ranks % degree == 0) choices.push_back({engine::StrategyKind::hybrid, degree, 1});
  std::vector<Plan> plans;
  for (const engine::StrategyChoice& choice : choices)
    for (rfa_layout_t layout : {RFA_LAYOUT_ZIGZAG, RFA_LAYOUT_CONTIGUOUS, RFA_LAYOUT_STRIPE}) {
      // Ulysses gathers the whole sequence: its layout changes nothing but the rows' order.
      if (choice.kind == engine::StrategyKind::ulysses && layout != RFA_LAYOUT_ZIGZAG) continue;
      engine::RingConfig c = config;
      c.layout = layout;
      try {
        engine::validate_strategy(choice, c, ranks);
      } catch (const Error&) {
        continue;  // this grid or layout does not fit the problem
      }
      plans.push_back(Plan{choice, layout, ranks, predict(c, choice, ranks, machine)});
    }
  std::stable_sort(plans.begin(), plans.end(),
                   [](const Plan& a, const Plan& b) { return step_seconds(a) < step_seconds(b); });
  return plans;
}

Plan choose_plan(const engine::RingConfig& config, int ranks, const MachineModel& machine) {
  std::vector<Plan> plans = rank_plans(config, ranks, machine);
  require(!plans.empty(), "no strategy fits S = ", config.seq_total, ", H = ", config.heads, " on ", ranks,
          " ranks (the sequence must split over the ranks, 2 * ranks for zigzag)");
  return plans.front();
}

}  // namespace model
}  // namespace rfa
