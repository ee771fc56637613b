// SPDX-License-Identifier: BSD-3-Clause
#include "topology/gather_keys.hpp"

#include <string>

#include "collective/bounded_collectives.hpp"
#include "collective/mpi_error.hpp"
#include "core/error.hpp"

namespace rfa::topology {

std::vector<RankKey> gather_keys(MPI_Comm comm, const RankKey& local) {
  int rank = 0, size = 1;
  collective::check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  collective::check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  RankKey mine = local;
  mine.rank = rank;
  std::vector<RankKey> keys(size);
  collective::allgather_within(comm, &mine, keys.data(), int(sizeof(RankKey)), MPI_BYTE,
                               "rfa topology: the ranks' topology keys (MPI_Iallgather)");
  // Every rank checks the same gathered bytes, so every rank throws alike.
  for (int r = 0; r < size; ++r) {
    if (keys[r].version != kRankKeyVersion) {
      fail(RFA_ERROR_INVALID_USAGE, "rfa topology: the topology key of rank ", r, " has layout version ",
           keys[r].version, " (this build: ", kRankKeyVersion, "); are all ranks running the same rfa build?");
    }
    if (keys[r].rank != r) {
      fail(RFA_ERROR_INVALID_USAGE, "rfa topology: the topology key in rank ", r, "'s place says rank ", keys[r].rank,
           "; the ranks' keys are not in rank order (do all ranks run the same rfa build and MPI library?)");
    }
  }
  return keys;
}

}  // namespace rfa::topology
