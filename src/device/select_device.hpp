// SPDX-License-Identifier: BSD-3-Clause
// An optional helper for jobs that start one rank per GPU (Slurm, mpiexec): choose the device
// from the node-local rank. rfa itself always uses the caller's current device; call this
// before creating anything that touches the GPU (Kokkos, an NCCL communicator) if the
// application does not choose a device itself.
#pragma once

#include <mpi.h>

namespace rfa::device {

/// Collective over comm (when MPI is initialized). The node-local rank comes from
/// MPI_Comm_split_type(MPI_COMM_TYPE_SHARED), with the launcher's variables and SLURM_LOCALID as
/// the fallback when MPI cannot be used (collective::node_local_rank); the device is that rank
/// modulo the number of visible devices. Makes it current (cudaSetDevice) and returns it. Throws RFA_ERROR_CUDA
/// when no device is usable or cudaSetDevice fails. Note the collective part runs before the
/// device check, so a rank without a device cannot leave the others waiting in it.
int select_device_by_local_rank(MPI_Comm comm);

}  // namespace rfa::device
