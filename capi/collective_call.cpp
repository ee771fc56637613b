// SPDX-License-Identifier: BSD-3-Clause
#include "collective_call.hpp"

#include <mpi.h>
#include <unistd.h>

namespace rfa {
namespace capi {

const char* collective_call_name(std::int64_t operation) {
  switch (operation) {
    case std::int64_t(CollectiveCall::forward): return "rfa_forward";
    case std::int64_t(CollectiveCall::backward): return "rfa_backward";
    case std::int64_t(CollectiveCall::allgather_bshd): return "rfa_allgather_bshd";
    case std::int64_t(CollectiveCall::destroy): return "rfa_context_destroy";
  }
  return "an unknown call";
}

bool mpi_is_running() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);  // both may be called at any time, even after MPI_Finalize
  MPI_Finalized(&finalized);
  return initialized && !finalized;
}

namespace {

/// Throws in a fork of the process that created `c`, before anything reaches MPI or the device.
void refuse_in_fork(const rfa_context_s& c) {
  if (!forked_since_creation(c)) return;
  fail(RFA_ERROR_INVALID_USAGE, "this process (pid ", getpid(), ") is a fork of the one that created the context (pid ",
       c.creator,
       "): the context's MPI communicator and device state are that process's, and MPI and CUDA do not carry over "
       "fork; only rfa_context_destroy() (which releases the handle here and frees nothing), the queries "
       "(rfa_context_get_*) and the local sharding helpers are allowed in it");
}

/// Throws where an earlier call left `c` unusable, saying why.
void refuse_if_unusable(const rfa_context_s& c) {
  if (c.unusable.empty()) return;
  fail(RFA_ERROR_INVALID_USAGE, "the context is unusable since ", c.unusable,
       "; only rfa_context_destroy(), the queries (rfa_context_get_*) and the local sharding helpers are "
       "allowed on it");
}

}  // namespace

void require_callable(const rfa_context_s& c, CollectiveCall call) {
  refuse_in_fork(c);
  if (!mpi_is_running()) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    fail(RFA_ERROR_INVALID_USAGE, collective_call_name(std::int64_t(call)), " is collective over MPI, and MPI is ",
         finalized ? "already finalized" : "not initialized",
         ": make collective calls between MPI_Init and MPI_Finalize (destroy contexts before MPI_Finalize)");
  }
  refuse_if_unusable(c);
}

void require_usable(const rfa_context_s& c) {
  refuse_in_fork(c);
  refuse_if_unusable(c);
}

void make_unusable(rfa_context_s& c, const char* call, rfa_result_t code, const std::string& why) {
  if (!c.unusable.empty()) return;
  const char* what = code == RFA_ERROR_TIMEOUT         ? " timed out"
                     : code == RFA_ERROR_CALL_MISMATCH ? " found the ranks in different calls"
                                                       : " failed on this rank after the ranks agreed to run it";
  c.unusable = "an earlier " + std::string(call) + what + " (" + why + ")";
}

}  // namespace capi
}  // namespace rfa
