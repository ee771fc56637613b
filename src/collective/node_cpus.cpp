// SPDX-License-Identifier: BSD-3-Clause
#include "collective/node_cpus.hpp"

#include <sched.h>

#include <cstring>
#include <thread>

#include "collective/bounded_collectives.hpp"
#include "collective/mpi_error.hpp"

namespace rfa::collective {

int node_cpus(MPI_Comm comm, const char* what) {
  cpu_set_t mine;
  CPU_ZERO(&mine);
  const bool known = sched_getaffinity(0, sizeof(mine), &mine) == 0;
  if (!known) {
    const unsigned online = std::thread::hardware_concurrency();
    for (unsigned c = 0; c < online && c < unsigned(CPU_SETSIZE); ++c) CPU_SET(c, &mine);
  }
  int rank = 0;
  check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  MPI_Comm node = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node), "MPI_Comm_split_type");
  constexpr int kWords = int(sizeof(cpu_set_t) / sizeof(unsigned long));
  unsigned long words[kWords];
  std::memcpy(words, &mine, sizeof(words));
  try {
    allreduce_within(node, words, kWords, MPI_UNSIGNED_LONG, MPI_BOR, what);
  } catch (...) {
    MPI_Comm_free(&node);
    throw;
  }
  MPI_Comm_free(&node);
  cpu_set_t together;
  std::memcpy(&together, words, sizeof(together));
  return CPU_COUNT(&together);
}

}  // namespace rfa::collective
