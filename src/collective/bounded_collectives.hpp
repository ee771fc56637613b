// SPDX-License-Identifier: BSD-3-Clause
// MPI collectives on a raw communicator that end by a deadline: each is started nonblocking
// and completed within current_timeout() (collective/deadline.hpp), or fails with
// RFA_ERROR_TIMEOUT naming what it was for. They work on a parked copy of the caller's
// buffers, abandoned to MPI on a timeout, so a rank that arrives later cannot write into
// memory the program has reused. Creation runs on them, so a rank that arrives after the
// others gave up fails too instead of waiting forever in the next collective.
#pragma once

#include <mpi.h>

namespace rfa::collective {

/// MPI_Allreduce in place over `count` elements of `type` at `values`.
void allreduce_within(MPI_Comm comm, void* values, int count, MPI_Datatype type, MPI_Op op, const char* what);

/// MPI_Bcast of `count` elements of `type` at `buffer` from `root`.
void bcast_within(MPI_Comm comm, void* buffer, int count, MPI_Datatype type, int root, const char* what);

/// MPI_Allgather of `count` elements of `type` from every rank into `recv` (size x count).
void allgather_within(MPI_Comm comm, const void* send, void* recv, int count, MPI_Datatype type, const char* what);

}  // namespace rfa::collective
