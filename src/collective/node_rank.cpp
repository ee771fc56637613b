// SPDX-License-Identifier: BSD-3-Clause
#include "collective/node_rank.hpp"

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
  const char* slurm = env_value(Env::slurm_localid);
  if (slurm && *slurm) {
    // A local rank is an int: a larger value would be narrowed to another.
    long long value = 0;
    require(parse_whole_number(slurm, 0, std::numeric_limits<int>::max(), &value), "SLURM_LOCALID='", slurm,
            "' is not a local rank");
    return static_cast<int>(value);
  }
  return 0;
}

}  // namespace rfa::collective
