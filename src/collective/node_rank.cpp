// SPDX-License-Identifier: BSD-3-Clause
#include "collective/node_rank.hpp"

#include <initializer_list>
#include <limits>

#include "collective/mpi_error.hpp"
#include "core/environment.hpp"
#include "core/error.hpp"

namespace rfa::collective {

MPI_Comm node_communicator(MPI_Comm comm) {
  int rank = 0;
  check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  MPI_Comm node = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node), "MPI_Comm_split_type");
  return node;
}

int node_local_rank(MPI_Comm comm) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) {
    MPI_Comm node = node_communicator(comm);
    int node_rank = 0;
    check_mpi(MPI_Comm_rank(node, &node_rank), "MPI_Comm_rank");
    MPI_Comm_free(&node);
    return node_rank;
  }
  // The launcher's own variable first: a process an mpiexec started inside a Slurm job inherits
  // SLURM_LOCALID from the step that launched it, the same on every rank of the node.
  for (const Env variable : {Env::ompi_local_rank, Env::mpich_local_rank, Env::slurm_localid}) {
    const char* text = env_value(variable);
    if (!text || !*text) continue;
    // A local rank is an int: a larger value would be narrowed to another.
    long long value = 0;
    require(parse_whole_number(text, 0, std::numeric_limits<int>::max(), &value), env_name(variable), "='", text,
            "' is not a local rank");
    return static_cast<int>(value);
  }
  return 0;
}

}  // namespace rfa::collective
