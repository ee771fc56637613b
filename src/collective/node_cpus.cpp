// SPDX-License-Identifier: BSD-3-Clause
#include "collective/node_cpus.hpp"

#include <dirent.h>
#include <sched.h>

#include <cstdlib>
#include <cstring>
#include <thread>

#include "collective/bounded_collectives.hpp"
#include "collective/mpi_error.hpp"
#include "collective/node_rank.hpp"

namespace rfa::collective {

namespace {

/// The CPUs any thread of this process may run on: the union over /proc/self/task (host
/// threads bound one per core, as OpenMP binds them, each see only their own), else the
/// calling thread's, else every CPU online.
cpu_set_t process_cpus() {
  cpu_set_t all;
  CPU_ZERO(&all);
  bool known = false;
  if (DIR* tasks = opendir("/proc/self/task")) {
    while (const dirent* entry = readdir(tasks)) {
      const pid_t tid = pid_t(std::atoi(entry->d_name));
      cpu_set_t one;
      CPU_ZERO(&one);
      if (tid > 0 && sched_getaffinity(tid, sizeof(one), &one) == 0) {
        CPU_OR(&all, &all, &one);
        known = true;
      }
    }
    closedir(tasks);
  }
  if (!known) known = sched_getaffinity(0, sizeof(all), &all) == 0;
  if (!known) {
    const unsigned online = std::thread::hardware_concurrency();
    for (unsigned c = 0; c < online && c < unsigned(CPU_SETSIZE); ++c) CPU_SET(c, &all);
  }
  return all;
}

}  // namespace

int node_cpus(MPI_Comm comm, const char* what) { return node_share(comm, what).cpus; }

NodeShare node_share(MPI_Comm comm, const char* what) {
  const cpu_set_t mine = process_cpus();
  MPI_Comm node = node_communicator(comm);
  NodeShare share;
  constexpr int kWords = int(sizeof(cpu_set_t) / sizeof(unsigned long));
  unsigned long words[kWords];
  std::memcpy(words, &mine, sizeof(words));
  try {
    check_mpi(MPI_Comm_size(node, &share.ranks), "MPI_Comm_size (the node's ranks)");
    allreduce_within(node, words, kWords, MPI_UNSIGNED_LONG, MPI_BOR, what);
  } catch (...) {
    MPI_Comm_free(&node);
    throw;
  }
  MPI_Comm_free(&node);
  cpu_set_t together;
  std::memcpy(&together, words, sizeof(together));
  share.cpus = CPU_COUNT(&together);
  return share;
}

}  // namespace rfa::collective
