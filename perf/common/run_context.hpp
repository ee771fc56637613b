// SPDX-License-Identifier: BSD-3-Clause
// Provenance of a benchmark run: where, on what and with which software it ran. Every
// program in perf/ puts these fields in the "context" block of its JSON, so the comparator
// (perf/compare) can tell a regression from a different machine or configuration.
#pragma once

#include <string>

#include "machine_context.hpp"

namespace rfa {
namespace perf {

/// The machine's fields (machine_context.hpp) plus the versions of rfa, Kokkos (and its
/// backends), MPI, NCCL, CUDA and hwloc, and "nodes": the node count set_node_count recorded
/// ("1" where none was). Local: no communication (MPI's library version may be asked before
/// MPI_Init).
ContextFields collect_run_context(const std::string& program);

/// Records how many nodes the run's ranks occupy, for collect_run_context (run_mpi_program
/// counts them once at its start). Nodes are told apart by host name.
void set_node_count(int nodes);

}  // namespace perf
}  // namespace rfa
