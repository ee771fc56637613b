// SPDX-License-Identifier: BSD-3-Clause
// Device buffers straight through a CUDA-aware MPI (docs/architecture.md §8). MPI knows no
// streams, so before it touches device memory the compute stream is synchronized: the bytes
// sent are what the queued kernels wrote, and a receive buffer is no longer being read. The
// data an exchange delivered is in device memory once test()/wait() report it complete, so
// kernels queued afterwards see it. Collectives go point to point (CUDA-aware MPIs support
// device memory in point-to-point calls, not in every nonblocking collective); the
// reduce-scatter, whose sums MpiCommunicator adds on the host, goes through host copies.
// The waits for the compute stream end by the context's deadline (device/stream_wait.hpp): a
// kernel that never ends fails the exchange with RFA_ERROR_TIMEOUT before MPI touches its
// buffers, and the transport then reports abandoned transfers, so that the engines keep the
// workspace the kernel may still write.
#pragma once

#include <memory>

#include "comm/communicator.hpp"

namespace rfa::comm {

/// Wraps `mpi` (an MpiCommunicator over a CUDA-aware MPI). `timeout_s`: how long a wait for the
/// compute stream may take (collective/deadline.hpp's convention: < 0 RFA_TIMEOUT_S, 0 none).
/// Not collective.
std::unique_ptr<Communicator> make_stream_ordered_communicator(std::unique_ptr<Communicator> mpi,
                                                               double timeout_s = -1.0);

}  // namespace rfa::comm
