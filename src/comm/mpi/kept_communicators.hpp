// SPDX-License-Identifier: BSD-3-Clause
// The MPI communicators this process keeps for good: a transport whose operation timed out
// leaves its communicator to MPI (operations it could not cancel still refer to it, and a late
// rank may still send on it, so neither freeing it nor letting MPI reuse its context id is
// safe). MPI holds a limited number of communicators in a process (Open MPI 4.1 65,532, MPICH
// 2,048, the caller's own included); a rank that cannot make another fails its split and leaves
// the other ranks blocked in theirs, a call MPI offers only blocking. So rfa_context_create
// refuses, on every rank, once a rank keeps RFA_MAX_KEPT_COMMUNICATORS of them: a verdict the
// ranks agree on before any split.
#pragma once

#include <cstddef>

namespace rfa::comm::mpi {

/// The most communicators of timed-out calls a process keeps before rfa refuses new contexts in
/// it, unless RFA_MAX_KEPT_COMMUNICATORS says otherwise: far past what a job that goes on after
/// a few timeouts reaches, and half of MPICH's whole allowance, so that the caller's own
/// communicators and rfa's temporary ones still fit.
inline constexpr std::size_t kDefaultMostKeptCommunicators = 1000;

/// Counts one more communicator left to MPI for the life of the process (thread-safe).
void count_kept_communicator() noexcept;

/// The communicators this process has left to MPI so far.
std::size_t kept_communicators() noexcept;

/// Local: throws RFA_ERROR_INVALID_USAGE, naming `call`, once this process keeps as many as
/// RFA_MAX_KEPT_COMMUNICATORS allows (kDefaultMostKeptCommunicators where unset);
/// RFA_ERROR_INVALID_ARGUMENT when that variable is not a whole number from 1 to 1000000.
void require_room_for_communicators(const char* call);

}  // namespace rfa::comm::mpi
