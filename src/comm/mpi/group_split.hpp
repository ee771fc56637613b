// SPDX-License-Identifier: BSD-3-Clause
// Communicator::split() for the transports built on an MPI communicator: MPI_Comm_split into
// the group, a new transport built over it, and the temporary group communicator freed (the
// transport splits its own private copy from it, as it does from any parent).
#pragma once

#include <mpi.h>

#include <utility>

#include "collective/mpi_error.hpp"

namespace rfa::comm::mpi {

/// Collective over `comm`. Returns make(group), where group holds the ranks that passed the
/// same `color`, ordered by `key`.
template <class Make>
auto with_group(MPI_Comm comm, int color, int key, Make&& make) {
  MPI_Comm group = MPI_COMM_NULL;
  collective::check_mpi(MPI_Comm_split(comm, color, key, &group), "MPI_Comm_split (group)");
  struct Free {
    MPI_Comm& c;
    ~Free() { MPI_Comm_free(&c); }
  } free_group{group};
  return std::forward<Make>(make)(group);
}

}  // namespace rfa::comm::mpi
