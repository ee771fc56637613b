// SPDX-License-Identifier: BSD-3-Clause
// rfa_context_create on a rank whose CPU the build refuses (core/build_isa.hpp): the rank still
// takes part in the creation's agreement (capi/creation_agreement.hpp), with a failing verdict,
// so that the other ranks, on CPUs the build fits, fail at once with its reason instead of
// meeting their deadline. Nothing compiled for the build's instruction sets may run there: this
// is plain MPI and the C library, in a file of the C ABI (compiled for the baseline x86-64).
#pragma once

#include <mpi.h>

#include "rfa/rfa.h"

namespace rfa {
namespace capi {

/// Collective over `comm`, as far as the agreement goes: sends this rank's failure
/// (RFA_ERROR_UNSUPPORTED) and, where it is the lowest failing rank, broadcasts `reason`, each
/// step within the creation's deadline (options->timeout_s where the struct holds it, else
/// RFA_TIMEOUT_S or the default). Does nothing where the creation fails before its agreement on
/// every rank alike: MPI not initialized or already finalized, `comm` MPI_COMM_NULL or an
/// intercommunicator, or MPI's thread level forbidding this thread to call now (a turn taken as
/// capi/mpi_thread_turn.hpp takes it, without throwing). Stops quietly at the deadline or at an
/// MPI error (the rank refuses either way).
void take_part_refused(MPI_Comm comm, const rfa_options_t* options, const char* reason) noexcept;

}  // namespace capi
}  // namespace rfa
