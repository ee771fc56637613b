// SPDX-License-Identifier: BSD-3-Clause
// How every collective call on a context runs (docs/architecture.md §6.7): the ranks first agree
// that they are all in the same call (which operation, which context, the how-manieth call on
// it) and that every rank's arguments are usable, in one reduction, before any data moves.
// Whatever leaves the ranks out of step afterwards (a timeout, ranks in different calls, a
// failure on this rank alone inside the call) makes the context unusable: every later call
// but rfa_context_destroy() is refused at once, so nothing of a broken call is ever received
// by a later one.
#pragma once

#include <cstdint>
#include <utility>

#include "comm/agreement.hpp"
#include "context.hpp"
#include "core/error.hpp"
#include "core/profiling_region.hpp"
#include "mpi_thread_turn.hpp"

namespace rfa {
namespace capi {

/// The collective calls of the C API, as numbered in call stamps (comm::CallStamp).
enum class CollectiveCall : std::int64_t { forward = 1, backward = 2, allgather_bshd = 3, destroy = 4 };

/// "rfa_forward", ... for a stamp's operation number.
const char* collective_call_name(std::int64_t operation);

/// Whether MPI is initialized and not yet finalized.
bool mpi_is_running();

/// Throws unless collective calls can run on `c` now: RFA_ERROR_INVALID_USAGE when MPI is not
/// initialized or already finalized (an MPI call would abort the job) or when the context is
/// unusable (the message says why).
void require_callable(const rfa_context_s& c, CollectiveCall call);

/// Throws RFA_ERROR_INVALID_USAGE, saying why, when `c` is unusable: for the calls that act on
/// its device, stream or workspace without communicating (rfa_context_set_stream,
/// rfa_context_synchronize, rfa_context_release_workspace), which after a timeout would wait
/// again for work that does not end, or order a new stream behind it. Also in a fork of the
/// process that created `c` (forked_since_creation).
void require_usable(const rfa_context_s& c);

/// Marks `c` unusable after `call` failed with `code` and `why`: later calls are refused, saying so.
void make_unusable(rfa_context_s& c, const char* call, rfa_result_t code, const std::string& why);

/// Starts collective call `call`: stamps the context's communicator with it, runs `checks`
/// (this rank's argument checks, which throw rfa::Error), then one agreement over the ring:
/// every rank fails together if the stamps differ (RFA_ERROR_CALL_MISMATCH) or any rank's
/// checks failed (that rank's code), all inside a Kokkos profiling region named for the call.
/// Then runs `body`; an error there that is not an agreed
/// one (rfa::AgreedError) makes the context unusable on this rank, as do timeouts and call
/// mismatches anywhere (a timeout in some rank's checks, a wait for its device's stream, on
/// every rank alike: that device's work may still write the call's buffers), failures of MPI or
/// NCCL, and any failure after which the engine's transports abandoned transfers.
template <class Checks, class Body>
void run_collective_call(rfa_context_s& c, CollectiveCall call, Checks&& checks, Body&& body) {
  require_callable(c, call);
  const char* name = collective_call_name(std::int64_t(call));
  const MpiThreadTurn turn(name);      // refused before any MPI call where MPI's thread level forbids it
  const ProfilingRegion region(name);  // the call's region in Kokkos' tools (core/profiling_region.hpp)
  c.comm->begin_call({c.id, std::int64_t(call), ++c.calls_begun, collective_call_name});
  try {
    comm::check_everywhere(*c.comm, std::forward<Checks>(checks));
    body();
  } catch (const AgreedError& e) {
    // Every rank failed at the same point: the ranks are in step, but for a timeout, a failure
    // of the transport itself (MPI or NCCL: on some rank an exchange gave up transfers, after
    // which its exchanges are out of step with the others'), or a failure that left this
    // rank's engine with transfers it gave up.
    const bool transport_failed = e.code() == RFA_ERROR_MPI || e.code() == RFA_ERROR_NCCL;
    if (e.code() == RFA_ERROR_TIMEOUT || transport_failed || (c.engine && c.engine->transfers_abandoned()))
      make_unusable(c, name, e.code(), e.what());
    throw;
  } catch (const Error& e) {
    make_unusable(c, name, e.code(), e.what());
    throw;
  } catch (...) {
    make_unusable(c, name, RFA_ERROR_INTERNAL, "an exception that was not an rfa error");
    throw;
  }
}

}  // namespace capi
}  // namespace rfa
