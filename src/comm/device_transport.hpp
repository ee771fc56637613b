// SPDX-License-Identifier: BSD-3-Clause
// The communicator for a context whose tensors are in CUDA device memory.
#pragma once

#include <mpi.h>

#include <memory>

#include "comm/communicator.hpp"
#include "comm/transport.hpp"

namespace rfa::comm {

/// Collective over `parent`. NCCL (refused, on every rank, when two ranks share a GPU: see
/// shared_gpu_message), or MPI: CUDA-aware when mpi_is_cuda_aware(), else staged through
/// pinned host buffers. `choice` must be resolved (resolve_transport). Every failure is
/// raised on every rank. Uses the caller's current CUDA device.
/// `timeout_s`: the deadline of every wait of the communicator, MPI's and NCCL's alike
/// (MpiOptions::timeout_s; NcclOptions::timeout_seconds).
std::unique_ptr<Communicator> make_device_communicator(MPI_Comm parent, int ring_position, TransportChoice choice,
                                                       double timeout_s = -1.0);

}  // namespace rfa::comm
