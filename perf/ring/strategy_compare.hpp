// SPDX-License-Identifier: BSD-3-Clause
// rfa_ring_bench --strategy: the context-parallel strategies side by side on one problem, in
// one run: time (median over --repeat of the slowest rank), bytes each rank sent (counted by
// the engines) and the engine workspace each rank allocated (counted by its Workspace; the
// tests check that count against Kokkos' allocation hooks), forward and backward. With --json
// the same figures go into perf/'s result format, one case per strategy and pass.
#pragma once

#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "engine/attention_strategy.hpp"
#include "run_options.hpp"

namespace rfa {
namespace perf {

/// "all" or a comma-separated list of ring, ulysses, allgather, hybrid:PU (PU ranks per
/// Ulysses group). "all" includes hybrid:2 when 2 < P and P is even. Throws
/// RFA_ERROR_INVALID_ARGUMENT for anything else.
std::vector<engine::StrategyChoice> parse_strategies(const std::string& text, int ranks);

/// Collective. Prints the table on rank 0 and, with o.json, writes the results there. A
/// strategy the problem does not fit (e.g. heads not divisible by P for Ulysses) is reported
/// and skipped on every rank.
void compare_strategies(comm::Communicator& comm, const RunOptions& o,
                        const std::vector<engine::StrategyChoice>& choices);

}  // namespace perf
}  // namespace rfa
