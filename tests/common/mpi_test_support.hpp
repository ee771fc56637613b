// SPDX-License-Identifier: BSD-3-Clause
// Small MPI helpers shared by the suites that run under mpiexec.
#pragma once

#include <mpi.h>

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

}  // namespace test
}  // namespace rfa
