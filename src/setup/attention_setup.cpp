// SPDX-License-Identifier: BSD-3-Clause
#include "setup/attention_setup.hpp"

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <vector>

#include "collective/agree_on_failure.hpp"
#include "collective/bounded_collectives.hpp"
#include "collective/node_cpus.hpp"
#include "comm/mpi/mpi_communicator.hpp"
#include "core/environment.hpp"
#include "core/error.hpp"
#include "engine/allgather_chunk.hpp"
#include "engine/engine_backends.hpp"
#include "kernels/bf16_products.hpp"
#include "model/plan.hpp"
#include "rfa/rfa_config.h"
#include "setup/measured_plan.hpp"
#include "topology/choose_ring_order.hpp"

#if RFA_ENGINE_CUDA
#include <cuda_runtime_api.h>

#include "comm/device_transport.hpp"
#include "device/current_device.hpp"
#endif

namespace rfa {
namespace setup {
namespace {

/// MPI on host memory; a device transport for a CUDA context.
std::unique_ptr<comm::Communicator> make_communicator(MPI_Comm comm, int position, const SetupRequest& r) {
  // resolve_transport reads RFA_TRANSPORT on each rank: first make sure they all see one value.
  collective::agreed_env(comm, Env::transport);
  if (r.config.device == engine::Device::host) {
    // Host memory moves over MPI whatever RFA_TRANSPORT names (it chooses a device transport),
    // but a value that is neither is refused here as on a CUDA context, not ignored.
    collective::agree_on_failure(comm, [&] { comm::resolve_transport(comm::TransportChoice::mpi, true); });
    return comm::make_mpi_communicator(comm, position, r.timeout_s);
  }
  comm::TransportChoice choice = comm::TransportChoice::automatic;
  collective::agree_on_failure(comm, [&] { choice = comm::resolve_transport(r.transport, RFA_HAVE_NCCL != 0); });
#if RFA_ENGINE_CUDA
  return comm::make_device_communicator(comm, position, choice, r.timeout_s);
#else
  collective::agree_on_failure(comm,
                               [] { fail(RFA_ERROR_UNSUPPORTED, "this build of rfa cannot run on CUDA devices"); });
  return nullptr;  // not reached: the agreement throws on every rank
#endif
}

/// The strategy and layout to run: the caller's, or the model's plan. The plan depends only on
/// what every rank has alike (the config, the ranks, the gathered host keys, the least host
/// thread count and bf16 products, the fewest CPUs of a node, RFA_PLAN_*, agreed first), so it
/// is the same everywhere; a variable set differently on some rank, or that does not parse,
/// fails every rank.
std::vector<model::Plan> choose_strategy(MPI_Comm comm, const SetupRequest& r, AttentionSetup& s) {
  const int ranks = int(s.order.order.size());
  if (!r.automatic_strategy) {
    ExplicitStrategy chosen = explicit_strategy(r, s.config, ranks);
    s.strategy = chosen.strategy;
    s.plan = chosen.plan;
    return {};
  }
  // The machine figures the model plans with, alike on every rank (a figure on one rank alone
  // would give the ranks different plans and so different collectives).
  collective::agreed_env(comm, Env::plan_kernel_rate);
  collective::agreed_env(comm, Env::plan_links);
  // The least threads per rank, the slowest bf16 products and the fewest CPUs of a node.
  int least[3] = {Kokkos::DefaultHostExecutionSpace().concurrency(), int(model::host_bf16_here()),
                  collective::node_cpus(comm, "the automatic strategy's node CPUs")};
  collective::allreduce_within(comm, least, 3, MPI_INT, MPI_MIN, "the automatic strategy's host threads");
  const model::PlanningHost host{least[0], model::HostBf16(least[1]), topology::most_ranks_on_one_host(s.order),
                                 double(least[2]) / double(std::max(1, least[0]))};
  std::vector<model::Plan> plans;
  collective::agree_on_failure(comm, [&] {
    plans = model::automatic_plans(s.config, ranks, host);
    s.strategy = plans.front().choice;
    s.config.layout = plans.front().layout;
    s.plan = "automatic: " + model::explain_plans(plans);
  });
  return plans;
}

/// RFA_PLAN_MEASURE (by default, where the ranks span several hosts): the model's plans within
/// the margin run on the context's shapes and the fastest replaces the model's first
/// (setup/measured_plan.hpp). The variable is agreed on first and every rank counts the same
/// hosts from the same gathered keys, so every rank measures the same plans or none.
/// `kernels_for` gives each plan's strategy its CUDA kernels (engine::kernels_for_strategy).
template <class KernelsFor>
void measure_plans(MPI_Comm comm, const std::vector<model::Plan>& plans, AttentionSetup& s,
                   const KernelsFor& kernels_for) {
  if (plans.empty()) return;
  const bool unset = collective::agreed_env(comm, Env::plan_measure).empty();
  const int hosts = topology::host_count(s.order);
  double margin = 0;
  collective::agree_on_failure(comm, [&] { margin = plan_measure_margin(hosts); });
  if (margin <= 0) return;
  const std::vector<std::size_t> candidates = plans_to_measure(plans, margin, kMostMeasuredPlans);
  if (candidates.size() < 2) return;  // nothing to choose between: the model's plan and text stand
  const MeasuredPlans m = fastest_measured(*s.comm, plans, candidates, [&](const model::Plan& plan) {
    engine::AttentionConfig config = s.config;
    config.cuda_kernels = kernels_for(plan.choice.kind);
    return time_plan_rounds(*s.comm, config, plan);
  });
  s.strategy = plans[m.fastest].choice;
  s.config.layout = plans[m.fastest].layout;
  s.plan = "automatic: " + explain_measured(plans, m, margin, unset ? hosts : 0);
}

/// For a CUDA config: throws RFA_ERROR_INVALID_USAGE unless Kokkos allocates on the caller's
/// current device (rfa's device buffers are Kokkos Views), RFA_ERROR_CUDA without a usable
/// device. Local (no communication); no-op on the host.
void require_kokkos_on_current_device(engine::Device device) {
  if (device != engine::Device::cuda) return;
#if RFA_ENGINE_CUDA
  int current = -1;
  if (cudaGetDevice(&current) != cudaSuccess) {
    cudaGetLastError();
    fail(RFA_ERROR_CUDA, "the device is CUDA but no CUDA device is usable on this rank");
  }
  const int kokkos_device = Kokkos::Cuda().cuda_device();
  if (kokkos_device != current) {
    fail(RFA_ERROR_INVALID_USAGE, "the current CUDA device is ", current, " but Kokkos was initialized on device ",
         kokkos_device,
         "; rfa's device buffers are Kokkos allocations, so make the device Kokkos uses current "
         "before rfa_context_create (or let rfa initialize Kokkos, which then uses the current device)");
  }
#endif
}

/// This rank's GPU in the ring order's topology key (GPUs of a node in PCI bus order, the socket
/// and NIC nearest the GPU): the current device's PCI bus id for a CUDA config; "" on the host
/// or where no device is usable, which require_kokkos_on_current_device then reports on every
/// rank.
std::string gpu_pci_bus_id_for(engine::Device device) {
#if RFA_ENGINE_CUDA
  if (device == engine::Device::cuda) return device::current_device_pci_bus_id_or_empty();
#endif
  (void)device;
  return "";
}

}  // namespace

ExplicitStrategy explicit_strategy(const SetupRequest& r, const engine::AttentionConfig& config, int ranks) {
  ExplicitStrategy e;
  e.strategy = engine::with_allgather_chunk(r.strategy, config, ranks);
  e.plan = model::Plan{e.strategy, config.layout, ranks, {}}.name() + ": chosen by " + r.chosen_by;
  return e;
}

AttentionSetup set_up_attention(MPI_Comm comm, const SetupRequest& request) {
  AttentionSetup s;
  s.config = request.config;
  // The host's bf16 products, read once: a switch set after creation changes nothing. Only a
  // host bf16 context asks (on an AMX CPU the first ask requests the tile state, which enlarges
  // every signal frame of the process); the others never run the bf16 host kernels.
  if (!s.config.bf16_products) {
    const bool host_bf16 = s.config.device == engine::Device::host && s.config.dtype == RFA_DTYPE_BFLOAT16;
    s.config.bf16_products = host_bf16 ? kernels::allowed_bf16_products() : kernels::Bf16Products::none;
  }
  s.order = topology::choose_ring_order(comm, request.ring_order, gpu_pci_bus_id_for(request.config.device));
  collective::agree_on_failure(comm, [&] { require_kokkos_on_current_device(request.config.device); });
  s.comm = make_communicator(comm, s.order.position, request);
  const std::vector<model::Plan> plans = choose_strategy(comm, request, s);
  // What the CUDA steps run on, the same on every rank (auto: cuDNN where every rank runs it,
  // but for the strategies that compute on rfa's kernels; the Hopper forward where every rank
  // runs it).
  const engine::CudaKernels kernels = engine::choose_cuda_kernels(*s.comm, s.config.device, request.cuda_kernels);
  const auto kernels_for = [&](engine::StrategyKind kind) {
    return engine::kernels_for_strategy(kernels, request.cuda_kernels, kind);
  };
  s.config.cuda_kernels = kernels_for(s.strategy.kind);
  s.config.cuda_path = engine::choose_cuda_path(*s.comm, s.config.device, request.cuda_path);
  engine::require_gpu_fits_head_dims(*s.comm, s.config);
  measure_plans(comm, plans, s, kernels_for);
  s.config.cuda_kernels = kernels_for(s.strategy.kind);  // the measured plan's strategy
  s.engine = engine::make_strategy(*s.comm, s.config, s.strategy);
  return s;
}

}  // namespace setup
}  // namespace rfa
