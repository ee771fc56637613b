// SPDX-License-Identifier: BSD-3-Clause
// The automatic strategy's plan chosen by measurement (RFA_PLAN_MEASURE): the performance model
// short-lists the plans it predicts within a margin of its best, each of them runs a forward and
// a backward pass on the context's shapes with synthetic inputs, and the plan whose slowest rank
// is fastest wins. Where the model's errors are larger than the gaps between its plans (ranks
// that share cores, a host TCP stack's processing: docs/performance-model.md, "Across nodes"),
// only a measurement tells the plans apart. Measuring costs the context's creation
// 1 + kMeasuredRounds passes of each plan measured, so it is the default only where the ranks
// span several hosts, whose links the model knows least; on one host the model alone decides.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "engine/attention_config.hpp"
#include "model/plan.hpp"

namespace rfa {
namespace setup {

/// At most this many plans are measured (the model's best ones within the margin).
constexpr std::size_t kMostMeasuredPlans = 6;
/// Timed forward + backward passes per plan, after one untimed pass that allocates the
/// engine's workspace; the best of them counts.
constexpr int kMeasuredRounds = 2;
/// No further plan starts once measuring has taken this long (every pass of the plans timed,
/// the untimed ones reckoned as long as the timed): a large problem, whose passes take
/// seconds, does not stretch the context's creation over minutes. The model's first plan is
/// always timed.
constexpr double kMeasuringBudgetSeconds = 60.0;

/// The margin measured where RFA_PLAN_MEASURE is unset and the ranks span several hosts: the
/// model's stated accuracy across nodes (docs/performance-model.md, "Across nodes"), so that
/// every plan the model cannot tell from its best is timed.
constexpr double kAcrossHostsMeasureMargin = 0.15;

/// RFA_PLAN_MEASURE as a fraction: the margin over the model's best prediction within which
/// plans are measured (`15`: 0.15; `0`: the model alone). Unset (or empty): 0 on one host,
/// kAcrossHostsMeasureMargin where the ranks run on `hosts` > 1 hosts. Throws
/// RFA_ERROR_INVALID_ARGUMENT unless it is a number from 0 to 1000. Local (no communication).
double plan_measure_margin(int hosts);

/// The plans to measure, as indices into `plans` (the model's, fastest predicted first): those
/// predicted to take at most (1 + margin) times the first's forward + backward, at most `most`
/// of them, in the model's order. The first is always among them. Local.
std::vector<std::size_t> plans_to_measure(const std::vector<model::Plan>& plans, double margin, std::size_t most);

/// What the measurement found.
struct MeasuredPlans {
  std::vector<std::size_t> measured;  ///< indices into the plans, in the order measured
  std::vector<double> seconds;        ///< per measured plan: the best round's slowest rank (inf: refused)
  std::size_t fastest = 0;            ///< index into the plans of the winner
  bool all_refused = false;           ///< every plan ran out of memory: fastest is the model's first
  std::size_t not_timed = 0;          ///< plans of the short list left untimed: the budget was spent
  double spent_seconds = 0;           ///< what measuring took, as reckoned against the budget
  double budget_seconds = 0;          ///< the budget it was reckoned against
};

/// Collective. Measures the plans `measured` names with `time_plan`, which returns this rank's
/// seconds of each round of one plan (kMeasuredRounds of them, the same plans in the same order
/// on every rank); a round takes as long as its slowest rank, a plan as long as its best round,
/// and the fastest plan wins (a tie goes to the model's order). A plan whose allocation fails
/// (RFA_ERROR_OUT_OF_MEMORY raised on every rank together) is left out; where every one does,
/// the model's first stands. Once the plans timed have taken `budget_seconds` (their rounds'
/// slowest ranks, times (1 + kMeasuredRounds) / kMeasuredRounds for the untimed pass), the rest
/// are left untimed; every rank sums the same reduced times, so every rank stops alike. Other
/// errors are raised. The same result on every rank.
MeasuredPlans fastest_measured(comm::Communicator& comm, const std::vector<model::Plan>& plans,
                               const std::vector<std::size_t>& measured,
                               const std::function<std::vector<double>(const model::Plan&)>& time_plan,
                               double budget_seconds = kMeasuringBudgetSeconds);

/// Collective over `comm`: builds `plan`'s engine for `config` (its layout replaced by the
/// plan's), runs one forward + backward pass on synthetic inputs of the config's shapes in the
/// config's memory space, then kMeasuredRounds more, each timed from a barrier until the
/// results are ready on this rank; returns their seconds. Allocates what a call's tensors and
/// the engine take, and frees it before returning; a failed allocation fails every rank.
std::vector<double> time_plan_rounds(comm::Communicator& comm, const engine::AttentionConfig& config,
                                     const model::Plan& plan);

/// "automatic: <winner>: measured <ms> ms forward + backward (...); then <plan> <ms> ms, ...;
/// the model alone: <its first plan>, predicted ..." for rfa_context_get_plan. `by_default_hosts`:
/// the number of hosts where the margin is the default across hosts (RFA_PLAN_MEASURE unset),
/// which the text then says; 0 where the variable gave it.
std::string explain_measured(const std::vector<model::Plan>& plans, const MeasuredPlans& m, double margin,
                             int by_default_hosts = 0);

}  // namespace setup
}  // namespace rfa
