// SPDX-License-Identifier: BSD-3-Clause
// rfa_context_create / _fint / destroy: the collective life of a ring.
#include <mpi.h>
#include <unistd.h>

#include <atomic>
#include <exception>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

#include "collective/agree_on_failure.hpp"
#include "collective/deadline.hpp"
#include "collective_call.hpp"
#include "comm/mpi/kept_communicators.hpp"
#include "comm/mpi/mpi_communicator.hpp"
#include "context.hpp"
#include "core/enum_value.hpp"
#include "core/error.hpp"
#include "core/kept_for_process.hpp"
#include "creation_agreement.hpp"
#include "engine/engine_backends.hpp"
#include "firewall.hpp"
#include "kokkos_lifetime.hpp"
#include "mpi_family_check.hpp"
#include "options.hpp"
#include "refused_creation.hpp"
#include "rfa/rfa_mpi.h"
#include "setup/attention_setup.hpp"

#if RFA_ENGINE_CUDA
#include "device/current_device.hpp"
#endif

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
  // An intercommunicator's collectives reach the other group, not this one (its all-gather
  // returns the remote ranks' records; an in-place all-reduce is erroneous), so the ring is
  // built on intracommunicators only. Every rank of both groups sees the same answer.
  int inter = 0;
  if (MPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS)
    fail(RFA_ERROR_INVALID_ARGUMENT, "comm is not a valid communicator (MPI_Comm_test_inter failed)");
  if (inter) {
    fail(RFA_ERROR_INVALID_ARGUMENT,
         "comm is an intercommunicator; rfa's ring runs over one group: pass an intracommunicator "
         "(MPI_Intercomm_merge makes one of both groups)");
  }
}

// Whether an MPI handle is a null pointer: where MPI's handles are pointers (Open MPI), a
// conversion from an integer that names nothing gives one; where they are integers, never.
template <class Handle>
bool is_null_pointer(Handle handle) {
  if constexpr (std::is_pointer<Handle>::value) {
    return handle == nullptr;
  } else {
    (void)handle;
    return false;
  }
}

// The id this process proposes for its next context; creation takes the largest proposal of
// any rank, so ids are the same on every rank of a context and never reused in the process.
std::atomic<std::int64_t> next_context_id{1};

void raise_next_context_id(std::int64_t at_least) {
  std::int64_t now = next_context_id.load();
  while (now < at_least && !next_context_id.compare_exchange_weak(now, at_least)) {
  }
}

/// The C API's name of a strategy.
rfa_strategy_t strategy_value(engine::StrategyKind kind) {
  switch (kind) {
    case engine::StrategyKind::ring: return RFA_STRATEGY_RING;
    case engine::StrategyKind::ulysses: return RFA_STRATEGY_ULYSSES;
    case engine::StrategyKind::allgather: return RFA_STRATEGY_ALLGATHER;
    case engine::StrategyKind::hybrid: return RFA_STRATEGY_HYBRID;
    case engine::StrategyKind::needed: return RFA_STRATEGY_NEEDED;
  }
  fail(RFA_ERROR_INTERNAL, "unknown strategy kind ", int(kind));
}

/// The deadline of the context's MPI operations as MpiOptions spells it (options.timeout_s: 0
/// the environment or the default, < 0 none, > 0 itself).
double mpi_timeout(const rfa_options_t& options) {
  if (options.timeout_s == 0.0) return -1.0;
  return options.timeout_s < 0.0 ? 0.0 : options.timeout_s;
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
  if (out) *out = nullptr;  // on every failure, the earliest (MPI unusable) among them
  // Before any MPI call but the state queries.
  const MpiThreadTurn turn("rfa_context_create");
  require_mpi_usable(comm);

  // Local checks, whose verdict every rank learns before anyone fails.
  LocalVerdict verdict;
  rfa_options_t options{};
  std::unique_ptr<ContextCount> count;
  try {
    if (!out) fail(RFA_ERROR_INVALID_ARGUMENT, "context (the output pointer) is NULL");
    options = read_options(caller_options, "options");
    // The deadline the options leave to the environment: a malformed RFA_TIMEOUT_S on one rank
    // fails every rank here, where reading it after the agreement failed that rank alone and
    // left the others in the creation's collectives until their deadline.
    if (options.timeout_s == 0.0) collective::timeout_from_environment();
    // Before the creation's splits: a rank out of communicators fails them all here instead.
    comm::mpi::require_room_for_communicators("rfa_context_create");
    count = std::make_unique<ContextCount>();
  } catch (const Error& e) {
    verdict = {e.code(), e.what()};
  } catch (const std::bad_alloc&) {  // agreed like any other local failure, not left to the guard
    verdict = {RFA_ERROR_OUT_OF_MEMORY, "out of host memory reading the options"};
  }
  // Every collective of the creation ends by the deadline, so a rank that arrives after the
  // others gave up fails too instead of waiting in the next one.
  const collective::DeadlineScope deadline(creation_timeout(verdict, options));
  const std::int64_t id = agree_on_creation(comm, verdict, options, next_context_id.load());
  raise_next_context_id(id + 1);

  int ranks = 0;
  MPI_Comm_size(comm, &ranks);
  // The same options everywhere: the same verdict everywhere.
  engine::AttentionConfig config = validate_options(options, ranks);

  auto context = std::make_unique<rfa_context_s>();
  context->id = id;
  context->creator = getpid();
  context->options = options;
  context->timeout_s = collective::resolve_timeout(mpi_timeout(options));
  // The caller may free its boundaries once this returns: the context keeps its own copy.
  context->doc_boundaries.assign(options.doc_boundaries, options.doc_boundaries + options.doc_boundary_count);
  context->options.doc_boundaries = context->doc_boundaries.empty() ? nullptr : context->doc_boundaries.data();
  context->doc_boundary_offsets.assign(options.doc_boundary_offsets,
                                       options.doc_boundary_offsets + options.doc_boundary_offset_count);
  context->options.doc_boundary_offsets =
      context->doc_boundary_offsets.empty() ? nullptr : context->doc_boundary_offsets.data();
  context->mask_ranges = config.ranges;  // the list as the engine indexed it
  context->options.mask_ranges =
      config.ranges && !config.ranges->entries().empty() ? config.ranges->entries().data() : nullptr;
  setup::SetupRequest request;
  request.config = std::move(config);
  request.automatic_strategy = enum_value(options.strategy) == RFA_STRATEGY_AUTO;
  if (!request.automatic_strategy) request.strategy = strategy_choice(options);
  request.ring_order = options.ring_order;
  request.transport = options.transport == RFA_TRANSPORT_MPI    ? comm::TransportChoice::mpi
                      : options.transport == RFA_TRANSPORT_NCCL ? comm::TransportChoice::nccl
                                                                : comm::TransportChoice::automatic;
  request.cuda_kernels = options.cuda_kernels == RFA_CUDA_KERNELS_CUDNN ? engine::KernelRequest::cudnn
                         : options.cuda_kernels == RFA_CUDA_KERNELS_RFA ? engine::KernelRequest::rfa
                                                                        : engine::KernelRequest::automatic;
  request.timeout_s = mpi_timeout(options);
  request.chosen_by = "the caller (options.strategy)";
  setup::AttentionSetup ring = setup::set_up_attention(comm, request);
  // The context reports what runs: the CUDA kernels chosen, and with RFA_STRATEGY_AUTO the plan.
  context->options.cuda_kernels =
      ring.config.cuda_kernels == engine::CudaKernels::cudnn ? RFA_CUDA_KERNELS_CUDNN : RFA_CUDA_KERNELS_RFA;
  if (request.automatic_strategy) {
    context->options.strategy = strategy_value(ring.strategy.kind);
    context->options.ulysses_degree =
        ring.strategy.kind == engine::StrategyKind::hybrid ? ring.strategy.ulysses_degree : 0;
    context->options.layout = ring.config.layout;
  }
  context->plan = std::move(ring.plan);
  context->comm = std::move(ring.comm);
  context->engine = std::move(ring.engine);
#if RFA_ENGINE_CUDA
  // The setup made sure it is the device Kokkos allocates on, where the context's buffers live.
  if (options.device == RFA_DEVICE_CUDA) context->cuda_device = device::require_current_device();
#endif
  *out = register_context(context.get());
  context.release();  // owned by the registry's entry until rfa_context_destroy
  count->keep();
  return RFA_SUCCESS;
}

}  // namespace
}  // namespace capi
}  // namespace rfa

extern "C" {

RFA_API rfa_result_t rfa_context_create(MPI_Comm comm, const rfa_options_t* options, rfa_context_t* context) {
  // Before any other MPI call: the MPI that answers must be of librfa's family (every rank of
  // the job finds the same), on a CPU the build refuses too.
  if (const char* refusal = rfa::capi::mpi_family_refusal()) {
    if (context) *context = nullptr;
    return rfa::capi::refuse_plainly(__func__, RFA_ERROR_VERSION_MISMATCH, refusal);
  }
  // On a CPU the build refuses, the creation's agreement still hears this rank's refusal, so
  // that the other ranks fail at once with its reason (capi/refused_creation.hpp).
  if (const char* refusal = rfa::build_isa_refusal()) {
    if (context) *context = nullptr;
    rfa::capi::take_part_refused(comm, options, refusal);
    return rfa::capi::refuse_this_cpu(__func__, refusal);
  }
  return rfa::capi::guard(__func__, [&] { return rfa::capi::create(comm, options, context); });
}

RFA_API rfa_result_t rfa_context_create_fint(MPI_Fint comm, const rfa_options_t* options, rfa_context_t* context) {
  if (const char* refusal = rfa::capi::mpi_family_refusal()) {
    if (context) *context = nullptr;
    return rfa::capi::refuse_plainly(__func__, RFA_ERROR_VERSION_MISMATCH, refusal);
  }
  if (const char* refusal = rfa::build_isa_refusal()) {
    if (context) *context = nullptr;
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (initialized && !finalized) {
      const MPI_Comm c = MPI_Comm_f2c(comm);
      if (!rfa::capi::is_null_pointer(c)) rfa::capi::take_part_refused(c, options, refusal);
    }
    return rfa::capi::refuse_this_cpu(__func__, refusal);
  }
  return rfa::capi::guard(__func__, [&] {
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    // MPI_Comm_f2c is only defined while MPI is initialized; create() says what is wrong.
    if (!initialized || finalized) return rfa::capi::create(MPI_COMM_NULL, options, context);
    if (context) *context = nullptr;
    const rfa::capi::MpiThreadTurn turn("rfa_context_create_fint");  // create() takes part in it
    const MPI_Comm c = MPI_Comm_f2c(comm);
    // Where MPI's handles are pointers (Open MPI), an integer that names no communicator
    // converts to a null pointer, not MPI_COMM_NULL, which MPI would refuse through
    // MPI_COMM_WORLD's error handler, fatal by default. Where they are integers (MPICH and its
    // kin) the conversion is the identity and tells nothing: MPI's own check decides there.
    if (rfa::capi::is_null_pointer(c)) {
      rfa::fail(RFA_ERROR_INVALID_ARGUMENT, "comm (Fortran handle ", comm, ") is not a communicator");
    }
    return rfa::capi::create(c, options, context);
  });
}

RFA_API rfa_result_t rfa_context_destroy(rfa_context_t context) {
  return rfa::capi::guard(__func__, [&] {
    if (!context) return RFA_SUCCESS;
    // In a fork of the process that created it, the handle alone is released: the context's
    // communicator, device state and Kokkos are that process's (nothing here may call MPI or
    // the device for them), so it is kept, unfreed, to this process's end.
    if (rfa_context_s* copy = rfa::capi::unregister_forked_copy(context)) {
      rfa::keep_for_process(std::unique_ptr<rfa_context_s>(copy));
      rfa::capi::release_context();  // counted as gone: rfa_finalize in the fork does not count it
      return RFA_SUCCESS;
    }
    // Refused before the context is touched, so that it can be destroyed in turn later.
    const rfa::capi::MpiThreadTurn turn("rfa_context_destroy");
    rfa_context_s* const live = rfa::capi::unregister_context(context);
    if (!live) {
      rfa::fail(RFA_ERROR_INVALID_ARGUMENT,
                "context is not a live rfa context: it was destroyed already, or never "
                "created by rfa_context_create");
    }
    // Runs whatever happens below, after the context is gone (it may finalize Kokkos).
    struct ReleaseContext {
      ~ReleaseContext() { rfa::capi::release_context(); }
    } const release;
    std::unique_ptr<rfa_context_s> owned(live);
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
    // frees its MPI communicator and never throws. Both synchronize a stream that exists, once
    // the context's last call has ended on the device: waited for by the deadline here, and
    // where it has not ended by then (a kernel that never ends) both are kept for the life of
    // the process instead (their device memory may still be in use, and freeing it would wait).
    try {
      rfa::capi::wait_for_last_call(*owned, "rfa_context_destroy");
    } catch (const rfa::Error& e) {
      // An error the device reports was the last call's to report (rfa_context_synchronize's).
      if (e.code() == RFA_ERROR_TIMEOUT) {
        if (!failure) failure = std::current_exception();
        rfa::capi::keep_device_state_for_process(*owned);
      }
    } catch (...) {  // no memory for the message: whether the call ended is unknown
      rfa::capi::keep_device_state_for_process(*owned);
      if (!failure) failure = std::current_exception();
    }
    rfa::capi::leave_callers_stream(*owned);
    owned->engine.reset();
    owned->comm.reset();
    owned.reset();
    if (failure) std::rethrow_exception(failure);
    return RFA_SUCCESS;
  });
}

}  // extern "C"
