// SPDX-License-Identifier: BSD-3-Clause
// Small MPI helpers shared by the suites that run under mpiexec.
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <thread>

namespace rfa {
namespace test {

inline int world_size() {
  int n = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

inline int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

/// Completes `request`, sleeping a millisecond between tests of it. A blocking MPI call polls
/// without pause (Open MPI yields the core between polls, a system call each time): ranks that
/// wait there for a rank a test makes late keep both of a 2-core machine's cores busy, which
/// slows the late rank's own work and the tests CTest runs beside it.
inline int wait_idle(MPI_Request* request) {
  for (;;) {
    int done = 0;
    const int rc = MPI_Test(request, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS || done) return rc;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

/// MPI_Barrier, waiting as wait_idle does: where a rank may arrive seconds after the others.
inline int barrier_idle(MPI_Comm comm) {
  MPI_Request request = MPI_REQUEST_NULL;
  const int rc = MPI_Ibarrier(comm, &request);
  return rc != MPI_SUCCESS ? rc : wait_idle(&request);
}

/// Whether `value` is the same on every rank of MPI_COMM_WORLD (collective).
inline bool same_on_every_rank(std::int64_t value) {
  std::int64_t lo = value, hi = value;
  MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_INT64_T, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
  return lo == hi;
}

}  // namespace test
}  // namespace rfa
