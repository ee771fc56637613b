// SPDX-License-Identifier: BSD-3-Clause
// Setting up an attention context: the one path from "these ranks want this attention" to an engine, shared by
// the C API's rfa_context_create and the main job rfa_run (docs/architecture.md §1). In order,
// every step collective and failing on every rank together: the ring order (topology), the
// device check (Kokkos allocates on the current CUDA device), the communicator (MPI on the
// host; NCCL or MPI staged / CUDA-aware on devices), the strategy (the caller's, or the
// performance model's plans for RFA_STRATEGY_AUTO), the CUDA block kernels for that strategy
// (rfa's or cuDNN's, and the implementation of rfa's kernels), the measurement that picks among
// the model's best plans where RFA_PLAN_MEASURE asks or the ranks span hosts
// (setup/measured_plan.hpp), the engine.
#pragma once

#include <mpi.h>

#include <memory>
#include <string>

#include "comm/communicator.hpp"
#include "comm/transport.hpp"
#include "engine/attention_config.hpp"
#include "engine/attention_strategy.hpp"
#include "engine/cuda_kernel_choice.hpp"
#include "rfa/rfa.h"
#include "topology/ring_order.hpp"

namespace rfa {
namespace setup {

/// What a caller asks for, in the engine's terms.
struct SetupRequest {
  /// The problem; config.device picks host or CUDA. With an automatic strategy, the layout is
  /// the plan's (this one is ignored).
  engine::AttentionConfig config;
  engine::StrategyChoice strategy;
  bool automatic_strategy = false;  ///< RFA_STRATEGY_AUTO: the model's plan (model/plan.hpp)
  rfa_ring_order_t ring_order = RFA_RING_ORDER_DEFAULT;
  comm::TransportChoice transport = comm::TransportChoice::automatic;  ///< CUDA contexts
  engine::KernelRequest cuda_kernels = engine::KernelRequest::automatic;
  /// The forward implementation of rfa's CUDA kernels (default: RFA_CUDA_KERNEL_PATH decides).
  engine::PathRequest cuda_path = engine::PathRequest::environment;
  /// The deadline of MPI operations as MpiOptions spells it: < 0 the environment or the
  /// default, 0 none, > 0 seconds.
  double timeout_s = -1.0;
  /// How the caller names its strategy choice in the plan's text ("options.strategy").
  std::string chosen_by = "the caller";
};

/// A ring set up. Members are destroyed in reverse order: the engine before the communicator it
/// refers to.
struct AttentionSetup {
  topology::RingOrder order;
  std::unique_ptr<comm::Communicator> comm;  ///< the attention's buffers travel on it
  engine::AttentionConfig config;            ///< as run: CUDA kernels chosen, layout planned
  engine::StrategyChoice strategy;           ///< as run: the plan's with RFA_STRATEGY_AUTO
  /// What was chosen and why: "automatic: <plan>: predicted ...; then ...", "automatic: <plan>:
  /// measured ...; then ...; the model alone: ..." or "<plan>: chosen by <chosen_by>".
  std::string plan;
  std::unique_ptr<engine::AttentionStrategy> engine;
};

/// The strategy a caller named, as it runs on `ranks` ranks (the KV all-gather's chunk set for
/// the config's device: engine/allgather_chunk.hpp), and its plan text "<plan>: chosen by
/// <chosen_by>". Local; the same on every rank for the same agreed arguments.
struct ExplicitStrategy {
  engine::StrategyChoice strategy;
  std::string plan;
};
ExplicitStrategy explicit_strategy(const SetupRequest& request, const engine::AttentionConfig& config, int ranks);

/// Collective over `comm`. Every step's failure (a bad RFA_RING_ORDER or RFA_TRANSPORT, a
/// device Kokkos does not allocate on, a strategy that cannot run the problem, a refused
/// allocation) is raised on every rank, that rank's message where it happened.
AttentionSetup set_up_attention(MPI_Comm comm, const SetupRequest& request);

}  // namespace setup
}  // namespace rfa
