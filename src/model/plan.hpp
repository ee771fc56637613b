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
/// all-gather on each layout (the balanced one where a window, documents or ranges can leave
/// the fixed ones uneven), Ulysses, and the hybrid for each Ulysses degree that divides the
/// ranks and the heads and fits in a node (`ring_only`: the ring's layouts alone, what devices
/// run). Sorted by predicted forward + backward time.
std::vector<Plan> rank_plans(const engine::AttentionConfig& config, int ranks, const MachineModel& machine,
                             bool ring_only = false);

/// The first of rank_plans(). Throws RFA_ERROR_INVALID_ARGUMENT if no plan fits.
Plan choose_plan(const engine::AttentionConfig& config, int ranks, const MachineModel& machine, bool ring_only = false);

/// What the plans say, for a caller to read: the first, its predicted forward and backward time
/// per rank, and the runners-up ("hybrid 2 x 2, zigzag: predicted 12.3 ms forward + 40.1 ms
/// backward per rank; then ring, zigzag 14.0 + 45.2 ms; ...").
std::string explain_plans(const std::vector<Plan>& plans);

/// What runs a host rank's bf16 products (kernels/bf16_product_engines.hpp), in order of speed.
enum class HostBf16 { portable = 0, dot_products = 1, amx_tiles = 2 };

/// This process's: AMX tiles or AVX512-BF16 dot products where the build, the CPU and the
/// environment allow them. Local; callers that plan together take the least over their ranks.
HostBf16 host_bf16_here();

/// What the ranks plan with, the same on every rank: the least host threads per rank and the
/// slowest bf16 products of any rank, the most ranks on one node, and the host threads the
/// fewest CPUs of a node can run at once over the threads of a rank (0: not known, a core per
/// rank).
struct PlanningHost {
  int threads = 1;
  HostBf16 bf16 = HostBf16::portable;
  int ranks_per_node = 1;
  double compute_units_per_node = 0;
};

/// The machine the automatic strategy plans `config` on: the preset of its device and dtype (docs/
/// performance-model.md; on the host the measured per-core rate of the kernels that run the
/// dtype, times the threads per rank, the node's cores shared where there are fewer than ranks,
/// the portable kernels' calibrated cost of a cut tile, and a call's cost per row for the
/// config's head dims at the rate planned with), with RFA_PLAN_KERNEL_RATE and RFA_PLAN_LINKS
/// overriding the rates and links. Throws RFA_ERROR_INVALID_ARGUMENT naming the variable when
/// one does not parse.
MachineModel planning_machine(const engine::AttentionConfig& config, const PlanningHost& host);

/// What the automatic strategy weighs: rank_plans() on planning_machine(), the ring's layouts
/// alone on devices. Throws RFA_ERROR_INVALID_ARGUMENT, saying why, when no plan fits.
std::vector<Plan> automatic_plans(const engine::AttentionConfig& config, int ranks, const PlanningHost& host);

}  // namespace model
}  // namespace rfa
