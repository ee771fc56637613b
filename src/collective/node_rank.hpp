// SPDX-License-Identifier: BSD-3-Clause
// A rank's index among the ranks of its node, from MPI: what the device helpers choose a GPU by
// and the topology keys record.
#pragma once

#include <mpi.h>

namespace rfa::collective {

/// This rank's index among the ranks of comm on its node: its rank in the communicator that
/// MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) gives (collective over comm). When MPI is not
/// initialized (or already finalized), falls back to the launcher's variable
/// (OMPI_COMM_WORLD_LOCAL_RANK, then MPI_LOCALRANKID), then to SLURM_LOCALID, then to 0. MPI is
/// the truth under Slurm too: SLURM_LOCALID counts tasks of the step, which differs from the
/// communicator's node-local rank when comm is not MPI_COMM_WORLD.
int node_local_rank(MPI_Comm comm);

/// The ranks of comm on this rank's node, as MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) groups
/// them (collective over comm); the caller frees it.
MPI_Comm node_communicator(MPI_Comm comm);

}  // namespace rfa::collective
