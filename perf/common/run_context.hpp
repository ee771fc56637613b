// SPDX-License-Identifier: BSD-3-Clause
// Provenance of a benchmark run: where, on what and with which software it ran. Every
// program in perf/ puts these fields in the "context" block of its JSON, so the comparator
// (perf/compare) can tell a regression from a different machine or configuration.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace rfa {
namespace perf {

/// Ordered (key, value) pairs; JSON object members in this order.
using ContextFields = std::vector<std::pair<std::string, std::string>>;

/// The fields every run shares: date, program, git commit, versions of rfa, Kokkos (and its
/// backends), MPI, NCCL, CUDA, hwloc and the compiler, host name, CPU and GPU model, core
/// count, and the Slurm job id and node list when the run is a Slurm job. Local: no
/// communication (MPI's library version may be asked before MPI_Init).
ContextFields collect_run_context(const std::string& program);

/// Sets `key` to `value`, replacing an earlier value of the same key.
void set_field(ContextFields& fields, const std::string& key, const std::string& value);

/// The CPU model as /proc/cpuinfo names it ("unknown" elsewhere).
std::string cpu_model();

/// Logical cores this process may run on (its affinity mask), at least 1.
int usable_cores();

}  // namespace perf
}  // namespace rfa
