// SPDX-License-Identifier: BSD-3-Clause
// The collective entry point: gather keys, pick the order the policy asks for, say where this
// rank sits. The caller applies it with MPI_Comm_split(parent, 0, position, &ring) (src/comm/).
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

#include "rfa/rfa.h"
#include "topology/ring_order.hpp"

namespace rfa::topology {

struct RingOrderOptions {
  rfa_ring_order_t policy = RFA_RING_ORDER_DEFAULT;
  std::string gpu_pci_bus_id;  ///< this rank's GPU ("" none); CUDA callers pass cudaDeviceGetPCIBusId
  std::string order_file;      ///< policy FILE: the file; "" takes it from RFA_RING_ORDER=file:PATH
};

/// Collective over comm. Resolves the policy (DEFAULT: RFA_RING_ORDER, else topology), gathers
/// the keys, computes or reads the order, and, when RFA_TOPO_DUMP=PATH is set, writes keys and
/// order as JSON from rank 0. Every failure (bad policy or variable, variable set differently
/// on different ranks, bad order file, bad PCI bus id on any rank, unwritable dump) throws the
/// same rfa::Error on every rank. A topology order that is not one cycle (a bug) falls back to
/// identity with a warning on stderr from rank 0.
RingOrder choose_ring_order(MPI_Comm comm, const RingOrderOptions& options);

/// Shorthand for choose_ring_order(comm, {policy, gpu_pci_bus_id, ""}).
RingOrder choose_ring_order(MPI_Comm comm, rfa_ring_order_t policy, const std::string& gpu_pci_bus_id = "");

}  // namespace rfa::topology
