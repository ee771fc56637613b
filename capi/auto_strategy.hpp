// SPDX-License-Identifier: BSD-3-Clause
// RFA_STRATEGY_AUTO at creation: the plan the performance model predicts fastest
// (model/plan.hpp), written into the context's options, and the text rfa_context_get_plan gives.
#pragma once

#include <mpi.h>

#include "context.hpp"
#include "topology/ring_order.hpp"

namespace rfa {
namespace capi {

/// Collective over `comm` (the creation's, under its deadline). For RFA_STRATEGY_AUTO, chooses
/// the strategy, Ulysses degree and layout for `ranks` ranks, placed as `order` found them, into
/// context.options; for any other strategy, says that the caller chose it. Sets context.plan.
/// The choice depends only on what every rank agreed on (options, ranks, the gathered host keys,
/// the least host thread count) and on RFA_PLAN_* (required alike), so it is the same everywhere.
void resolve_strategy(MPI_Comm comm, const topology::RingOrder& order, int ranks, rfa_context_s& context);

}  // namespace capi
}  // namespace rfa
