// SPDX-License-Identifier: BSD-3-Clause
// The communicator a new context gets: MPI on host memory, or a device transport (NCCL, or
// MPI CUDA-aware / staged) for a CUDA context (docs/architecture.md §8).
#pragma once

#include <mpi.h>

#include <memory>

#include "comm/communicator.hpp"
#include "rfa/rfa.h"

namespace rfa {
namespace capi {

/// Collective over `comm`. RFA_TRANSPORT is read on every rank and must agree. Fails on every
/// rank together.
std::unique_ptr<comm::Communicator> make_context_communicator(MPI_Comm comm, int ring_position,
                                                              const rfa_options_t& options);

/// The deadline of the context's MPI operations as MpiOptions::timeout_s spells it.
double mpi_timeout(const rfa_options_t& options);

/// For a CUDA context: throws RFA_ERROR_INVALID_USAGE unless Kokkos allocates on the caller's
/// current device (rfa's device buffers are Kokkos Views). No-op for a host context.
void require_kokkos_on_current_device(const rfa_options_t& options);

}  // namespace capi
}  // namespace rfa
