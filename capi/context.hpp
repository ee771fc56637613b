// SPDX-License-Identifier: BSD-3-Clause
// What an rfa_context_t stands for (the handle is a token: context_ref finds the context). The
// communicator is declared before the engine, so it is built first and destroyed last: every
// strategy keeps a reference to it.
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "comm/communicator.hpp"
#include "core/error.hpp"
#include "core/mask_ranges.hpp"
#include "engine/attention_strategy.hpp"
#include "engine/engine_backends.hpp"
#include "rfa/rfa.h"

#if RFA_ENGINE_CUDA
#include "device/stream_order.hpp"
#endif

struct rfa_context_s {
  std::unique_ptr<rfa::comm::Communicator> comm;
  std::unique_ptr<rfa::engine::AttentionStrategy> engine;  ///< options.strategy's engine
  rfa_options_t options;                           ///< as created, defaults applied, struct_size = sizeof (this build)
  std::vector<std::int64_t> doc_boundaries;        ///< the copy options.doc_boundaries points to
  std::vector<std::int64_t> doc_boundary_offsets;  ///< the copy options.doc_boundary_offsets points to
  std::shared_ptr<const rfa::MaskRanges> mask_ranges;  ///< the list options.mask_ranges points to (the engine's)
  std::int64_t id = 0;                                 ///< agreed at creation: the same on every rank (call stamps)
  std::int64_t calls_begun = 0;                        ///< collective calls begun on this rank (call stamps)
  std::string unusable;                                ///< why the context takes no more calls ("" while it does)
  std::string plan;                                    ///< what it runs and why (rfa_context_get_plan)
  int cuda_device = -1;    ///< a CUDA context's device: current at its creation, and at each of its calls
  double timeout_s = 0.0;  ///< the deadline of its waits in seconds (0: none), resolved at creation
  /// The process that created it: in a fork of that process (a child of fork()) the context's
  /// MPI communicator and device state are the parent's, and no call that uses them may run.
  pid_t creator = 0;
#if RFA_ENGINE_CUDA
  rfa::engine::StreamExec sinks_exec;     ///< where a CUDA context's sinks are folded in (its stream)
  rfa::device::StreamOrder stream_order;  ///< a new stream waits for the calls queued on the last one
#endif
};

namespace rfa {
namespace capi {

/// Whether this process is a fork (a child of fork()) of the one that created `c`: MPI and CUDA
/// do not carry over fork, so the child's copy of the context takes no call that communicates or
/// touches its device (a forward in the child would take the parents' messages from Open MPI's
/// shared-memory transport, and crash them).
inline bool forked_since_creation(const rfa_context_s& c) { return getpid() != c.creator; }

/// Throws RFA_ERROR_INVALID_ARGUMENT naming `what` unless the pointer is non-null.
inline void require_pointer(const void* p, const char* what) {
  if (!p) fail(RFA_ERROR_INVALID_ARGUMENT, what, " is NULL");
}

/// Live contexts (context_registry.cpp): register_context gives a new context its handle, a
/// token never given out before in the process (not the context's address, which a later
/// context may reuse); unregister_context takes it back and returns the context, or nullptr
/// for a handle that is not live; live_context looks a handle up the same way.
rfa_context_t register_context(rfa_context_s* context);
rfa_context_s* unregister_context(rfa_context_t handle);
/// Unregisters and returns the context behind `handle` where this process is a fork of the one
/// that created it (rfa_context_s::creator); nullptr where the handle is not live or the
/// context is this process's own. One look under the registry's lock, so that a concurrent
/// destroy of the handle cannot free the context in between.
rfa_context_s* unregister_forked_copy(rfa_context_t handle);
rfa_context_s* live_context(rfa_context_t handle);
/// The registry's mutex (capi/fork_handlers.cpp takes it across a fork).
std::mutex& context_registry_mutex();

/// The context behind a handle, or RFA_ERROR_INVALID_ARGUMENT for NULL and for a handle that
/// is not a live context (already destroyed, or never created by rfa_context_create).
inline rfa_context_s& context_ref(rfa_context_t handle) {
  require_pointer(handle, "context");
  rfa_context_s* context = live_context(handle);
  if (!context) {
    fail(RFA_ERROR_INVALID_ARGUMENT,
         "context is not a live rfa context: it was destroyed already, or never "
         "created by rfa_context_create");
  }
  return *context;
}

/// Before a context is destroyed (context_stream.cpp): a CUDA context leaves the caller's stream,
/// which the caller may have destroyed since the last call, for the legacy default stream, which
/// waits on the device for the last call's end. Never throws; nothing to do for a host context.
void leave_callers_stream(rfa_context_s& c) noexcept;

/// Waits by the context's deadline (device/stream_wait.hpp) for the work queued on a CUDA
/// context's stream: RFA_ERROR_TIMEOUT naming `what` where it is still pending then (a kernel
/// that never ends), RFA_ERROR_CUDA where the stream reports an error. Returns at once on a host
/// context. rfa's own synchronizations of the stream (its engines' and transports' before they
/// free device memory) come after such a wait, and so return at once.
void wait_for_context_stream(const rfa_context_s& c, const std::string& what);

/// Before a context is destroyed: waits by the context's deadline until its last call has ended
/// on the device (device::StreamOrder::wait_for_last_call; the caller's stream may be gone).
/// Throws RFA_ERROR_TIMEOUT naming `what`, or RFA_ERROR_CUDA; returns at once on a host context.
void wait_for_last_call(const rfa_context_s& c, const std::string& what);

/// After wait_for_last_call timed out: the engine, the communicator and the sinks' execution
/// instance are kept for the life of the process instead of destroyed (the work may still use
/// their memory, and freeing device memory would wait for it). Never throws.
void keep_device_state_for_process(rfa_context_s& c) noexcept;

/// The same for a call outside the collective calls (`call`: rfa_context_synchronize, ...): a
/// timeout also makes the context unusable, as a timeout inside a collective call does.
void wait_for_context_stream_in(rfa_context_s& c, const char* call);

}  // namespace capi
}  // namespace rfa
