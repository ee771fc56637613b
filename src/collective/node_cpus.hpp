// SPDX-License-Identifier: BSD-3-Clause
// The CPUs the ranks of a node may run on together: what tells the performance model whether
// ranks share cores (more ranks than cores on a node), and rfa's waits whether to poll without
// pause (collective/wait_spin.hpp).
#pragma once

#include <mpi.h>

namespace rfa::collective {

/// The number of CPUs in the union of the CPU affinity masks of comm's ranks on this rank's
/// node (the ranks MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) groups with it), every thread of
/// each. Collective over
/// comm, ending by its deadline (bounded_collectives.hpp); `what` names the call in a timeout's
/// message. Where the affinity cannot be read, the CPUs online on the node.
int node_cpus(MPI_Comm comm, const char* what);

/// comm's ranks on this rank's node and the CPUs they may run on together (node_cpus).
struct NodeShare {
  int ranks = 1;
  int cpus = 1;
};

/// node_cpus and the number of comm's ranks on this rank's node. Collective over comm, as
/// node_cpus.
NodeShare node_share(MPI_Comm comm, const char* what);

}  // namespace rfa::collective
