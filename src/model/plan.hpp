// SPDX-License-Identifier: BSD-3-Clause
// The plan the performance model picks for a problem on a machine: the strategy, its Ulysses
// degree and the layout with the shortest predicted forward + backward (a training step), among
// every combination the problem fits (engine::validate_strategy). The same inputs give the same
// plan on every rank (no communication).
#pragma once

#include <string>
#include <vector>

#include "model/performance_model.hpp"

namespace rfa {
namespace model {

struct Plan {
  engine::StrategyChoice choice;
  rfa_layout_t layout = RFA_LAYOUT_ZIGZAG;
  int ranks = 1;
  Prediction prediction;
  /// "ring, zigzag" or "hybrid 8 x 16, zigzag" (Ulysses groups of 8, a ring of 16 groups): the
  /// plan as output names it.
  std::string name() const;
};

/// Every plan the problem fits on `ranks` ranks, with its prediction: the ring and the KV
/// all-gather on each layout, Ulysses, and the hybrid for each Ulysses degree that divides the
/// ranks and the heads and fits in a node. Sorted by predicted forward + backward time.
std::vector<Plan> rank_plans(const engine::RingConfig& config, int ranks, const MachineModel& machine);

/// The first of rank_plans(). Throws RFA_ERROR_INVALID_ARGUMENT if no plan fits.
Plan choose_plan(const engine::RingConfig& config, int ranks, const MachineModel& machine);

}  // namespace model
}  // namespace rfa
