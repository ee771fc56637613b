// The frame both ring programs run in: MPI and Kokkos set up and torn down around the body,
// and an rfa::Error that escapes it reported with the program's name and the rank.
#pragma once

#include <mpi.h>

#include <Kokkos_Core.hpp>
#include <cstdio>

#include "core/error.hpp"

namespace rfa {
namespace perf {

/// Returns body(world_rank)'s exit code, or 2 after printing an escaped rfa::Error.
template <class Body>
int run_mpi_program(int argc, char** argv, const char* name, Body&& body) {
  MPI_Init(&argc, &argv);
  int world_rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  Kokkos::initialize(argc, argv);
  int rc = 0;
  try {
    rc = body(world_rank);
  } catch (const Error& e) {
    std::fprintf(stderr, "%s (rank %d): error: %s\n", name, world_rank, e.what());
    rc = 2;
  }
  Kokkos::finalize();
  MPI_Finalize();
  return rc;
}

}  // namespace perf
}  // namespace rfa
