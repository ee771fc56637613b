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
/// ranks and the heads and fits in a node (`ring_only`: the ring's layouts alone, what devices
/// run). Sorted by predicted forward + backward time.
std::vector<Plan> rank_plans(const engine::RingConfig& config, int ranks, const MachineModel& machine,
                             bool ring_only = false);

/// The first of rank_plans(). Throws RFA_ERROR_INVALID_ARGUMENT if no plan fits.
Plan choose_plan(const engine::RingConfig& config, int ranks, const MachineModel& machine, bool ring_only = false);

/// What the plans say, for a caller to read: the first, its predicted forward and backward time
/// per rank, and the runners-up ("hybrid 2 x 2, zigzag: predicted 12.3 ms forward + 40.1 ms
/// backward per rank; then ring, zigzag 14.0 + 45.2 ms; ...").
std::string explain_plans(const std::vector<Plan>& plans);

/// The machine the automatic strategy plans for: the preset of the device (docs/
/// performance-model.md; the host's kernel rate scaled by `host_threads` per rank), with
/// RFA_PLAN_KERNEL_RATE and RFA_PLAN_LINKS overriding it. Throws RFA_ERROR_INVALID_ARGUMENT
/// naming the variable when one does not parse.
MachineModel planning_machine(engine::Device device, int host_threads, int ranks_per_node);

/// What the automatic strategy weighs: rank_plans() on planning_machine(), the ring's layouts
/// alone on devices. Throws RFA_ERROR_INVALID_ARGUMENT, saying why, when no plan fits.
std::vector<Plan> automatic_plans(const engine::RingConfig& config, int ranks, int host_threads, int ranks_per_node);

}  // namespace model
}  // namespace rfa
