// SPDX-License-Identifier: BSD-3-Clause
// Device buffers straight through a CUDA-aware MPI (docs/architecture.md §8). MPI knows no
// streams, so before it touches device memory the compute stream is synchronized: the bytes
// sent are what the queued kernels wrote, and a receive buffer is no longer being read. The
// data an exchange delivered is in device memory once test()/wait() report it complete, so
// kernels queued afterwards see it. Collectives go point to point (CUDA-aware MPIs support
// device memory in point-to-point calls, not in every nonblocking collective); the
// reduce-scatter, whose sums MpiCommunicator adds on the host, goes through host copies.
#pragma once

#include <memory>

#include "comm/communicator.hpp"

namespace rfa::comm {

/// Wraps `mpi` (an MpiCommunicator over a CUDA-aware MPI). Not collective.
std::unique_ptr<Communicator> make_stream_ordered_communicator(std::unique_ptr<Communicator> mpi);

}  // namespace rfa::comm
