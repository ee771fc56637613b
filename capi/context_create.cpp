// SPDX-License-Identifier: BSD-3-Clause
// rfa_context_create / _fint / destroy: the collective life of a ring.
#include <mpi.h>

#include <atomic>
#include <exception>
#include <memory>
#include <new>

#include "auto_strategy.hpp"
#include "comm/mpi/mpi_communicator.hpp"
#include "collective_call.hpp"
#include "context.hpp"
#include "context_transport.hpp"
#include "core/error.hpp"
#include "creation_agreement.hpp"
#include "engine/cuda_kernel_choice.hpp"
#include "firewall.hpp"
#include "kokkos_lifetime.hpp"
#include "options.hpp"
#include "rfa/rfa_mpi.h"
#include "topology/choose_ring_order.hpp"
#include "collective/agree_on_failure.hpp"
#include "collective/deadline.hpp"

namespace rfa {
namespace capi {
namespace {

// MPI state is checked before anything else: without MPI there is no collective to agree in.
void require_mpi_usable(MPI_Comm comm) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized) {
    fail(RFA_ERROR_INVALID_USAGE, "MPI is ", finalized ? "already finalized" : "not initialized",
         "; rfa never initializes MPI: call MPI_Init (or MPI_Init_thread) before rfa_context_create and "
         "destroy contexts before MPI_Finalize");
  }
  if (comm == MPI_COMM_NULL) fail(RFA_ERROR_INVALID_ARGUMENT, "comm is MPI_COMM_NULL");
}

// The id this process proposes for its next context; creation takes the largest proposal of
// any rank, so ids are the same on every rank of a context and never reused in the process.
std::atomic<std::int64_t> next_context_id{1};

void raise_next_context_id(std::int64_t at_least) {
  std::int64_t now = next_context_id.load();
  while (now < at_least && !next_context_id.compare_exchange_weak(now, at_least)) {
  }
}

// Undoes acquire_kokkos_for_context() unless the context was handed out.
class ContextCount {
 public:
  ContextCount() { acquire_kokkos_for_context(); }
  ~ContextCount() {
    if (!kept_) release_context();
  }
  void keep() { kept_ = true; }
  ContextCount(const ContextCount&) = delete;
  ContextCount& operator=(const ContextCount&) = delete;

 private:
  bool kept_ = false;
};

rfa_result_t create(MPI_Comm comm, const rfa_options_t* caller_options, rfa_context_t* out) {
  require_mpi_usable(comm);
  if (out) *out = nullptr;

  // Local checks, whose verdict every rank learns before anyone fails.
  LocalVerdict verdict;
  rfa_options_t options{};
  std::unique_ptr<ContextCount> count;
  try {
    if (!out) fail(RFA_ERROR_INVALID_ARGUMENT, "context (the output pointer) is NULL");
    options = read_options(caller_options, "options");
    count = std::make_unique<ContextCount>();
  } catch (const Error& e) {
    verdict = {e.code(), e.what()};
  }
  // Every collective of the creation ends by the deadline, so a rank that arrives after the
  // others gave up fails too instead of waiting in the next one.
  const collective::DeadlineScope deadline(creation_timeout(verdict, options));
  const std::int64_t id = agree_on_creation(comm, verdict, options, next_context_id.load());
  raise_next_context_id(id + 1);

  int ranks = 0;
  MPI_Comm_size(comm, &ranks);
  validate_options(options, ranks);  // the same options everywhere: the same verdict everywhere

  auto context = std::make_unique<rfa_context_s>();
  context->id = id;
  context->options = options;
  // The caller may free its boundaries once this returns: the context keeps its own copy.
  context->doc_boundaries.assign(options.doc_boundaries, options.doc_boundaries + options.doc_boundary_count);
  context->options.doc_boundaries = context->doc_boundaries.empty() ? nullptr : context->doc_boundaries.data();
  const topology::RingOrder order = topology::choose_ring_order(comm, options.ring_order);
  collective::agree_on_failure(comm, [&] { require_kokkos_on_current_device(options); });
  context->comm = make_context_communicator(comm, order.position, options);
  // What the CUDA steps run on, the same on every rank; the context reports it.
  const engine::KernelRequest request = options.cuda_kernels == RFA_CUDA_KERNELS_CUDNN ? engine::KernelRequest::cudnn
                                        : options.cuda_kernels == RFA_CUDA_KERNELS_RFA
                                            ? engine::KernelRequest::rfa
                                            : engine::KernelRequest::automatic;
  const engine::Device device = options.device == RFA_DEVICE_CUDA ? engine::Device::cuda : engine::Device::host;
  context->options.cuda_kernels =
      engine::choose_cuda_kernels(*context->comm, device, request) == engine::CudaKernels::cudnn
          ? RFA_CUDA_KERNELS_CUDNN
          : RFA_CUDA_KERNELS_RFA;
  // RFA_STRATEGY_AUTO becomes the plan the performance model picks, the same on every rank.
  resolve_strategy(comm, order, ranks, *context);
  context->engine =
      engine::make_strategy(*context->comm, ring_config(context->options), strategy_choice(context->options));
  count->keep();
  register_context(context.get());
  *out = context.release();
  return RFA_SUCCESS;
}

}  // namespace
}  // namespace capi
}  // namespace rfa

extern "C" {

RFA_API rfa_result_t rfa_context_create(MPI_Comm comm, const rfa_options_t* options, rfa_context_t* context) {
  return rfa::capi::guard(__func__, [&] { return rfa::capi::create(comm, options, context); });
}

RFA_API rfa_result_t rfa_context_create_fint(MPI_Fint comm, const rfa_options_t* options, rfa_context_t* context) {
  return rfa::capi::guard(__func__, [&] {
    int initialized = 0;
    MPI_Initialized(&initialized);
    // MPI_Comm_f2c is only defined once MPI is initialized; create() says what is wrong.
    return rfa::capi::create(initialized ? MPI_Comm_f2c(comm) : MPI_COMM_NULL, options, context);
  });
}

RFA_API rfa_result_t rfa_context_destroy(rfa_context_t context) {
  return rfa::capi::guard(__func__, [&] {
    if (!context) return RFA_SUCCESS;
    if (!rfa::capi::unregister_context(context)) {
      rfa::fail(RFA_ERROR_INVALID_ARGUMENT,
                "context is not a live rfa context: it was destroyed already, or never "
                "created by rfa_context_create");
    }
    std::unique_ptr<rfa_context_s> owned(context);
    // The ranks agree that they are all destroying this context (a rank in another call fails
    // with them, RFA_ERROR_CALL_MISMATCH), unless the context is already unusable or MPI is
    // gone; the context is destroyed whatever the agreement says.
    std::exception_ptr failure;
    if (owned->unusable.empty() && rfa::capi::mpi_is_running()) {
      try {
        rfa::capi::run_collective_call(
            *owned, rfa::capi::CollectiveCall::destroy, [] {}, [] {});
      } catch (...) {
        failure = std::current_exception();
      }
    }
    // The engine goes first (it refers to the communicator); the communicator's destructor
    // frees its MPI communicator and never throws.
    owned->engine.reset();
    owned->comm.reset();
    owned.reset();
    rfa::capi::release_context();
    if (failure) std::rethrow_exception(failure);
    return RFA_SUCCESS;
  });
}

}  // extern "C"
