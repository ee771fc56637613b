// SPDX-License-Identifier: BSD-3-Clause
// Collecting every rank's key, and the node-local rank, over MPI.
#pragma once

#include <mpi.h>

#include <vector>

#include "topology/rank_key.hpp"

namespace rfa::topology {

/// Collective: every rank gets every key, keys[i] from rank i of comm (rank fields set).
/// Throws RFA_ERROR_INVALID_USAGE on every rank when a key comes from a build with another
/// RankKey layout.
std::vector<RankKey> gather_keys(MPI_Comm comm, const RankKey& local);

/// This rank's index among the ranks of comm on its node: its rank in the communicator that
/// MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) gives (collective over comm). When MPI is not
/// initialized (or already finalized), falls back to SLURM_LOCALID, then to 0. MPI is the
/// truth under Slurm too: SLURM_LOCALID counts tasks of the step, which differs from the
/// communicator's node-local rank when comm is not MPI_COMM_WORLD.
int local_rank(MPI_Comm comm);

}  // namespace rfa::topology
