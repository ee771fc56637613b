// SPDX-License-Identifier: BSD-3-Clause
// The part of a run's provenance that needs nothing but the C++ library and the OS: when,
// where and from which build it ran. run_context.hpp adds the software versions (Kokkos, MPI,
// hwloc, ...); kernels_cuda's GPU benchmarks, which have neither Kokkos nor MPI, use this alone
// and add their own (CUDA runtime and driver, GPU).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace rfa {
namespace perf {

/// Ordered (key, value) pairs; JSON object members in this order.
using ContextFields = std::vector<std::pair<std::string, std::string>>;

/// The version of the result files' format (docs/benchmarks.md), their context's
/// "result_schema": perf/compare refuses a file of a newer format than it knows. Raised when a
/// field changes meaning or the file's layout changes; new fields need no new version.
constexpr int kResultSchema = 1;

/// The result format's version, date, program, host name, CPU count and model, GPU models (from the driver's /proc
/// files: no CUDA runtime needed), git commit (from a header rewritten at build time, "-dirty" when tracked files were
/// edited: cmake/RfaGitState.cmake), compiler and build type (compile definitions RFA_PERF_COMPILER,
/// RFA_PERF_BUILD_TYPE: cmake/RfaPerfProvenance.cmake), and the Slurm job id and node list when the run is a Slurm job.
ContextFields collect_machine_context(const std::string& program);

/// Sets `key` to `value`, replacing an earlier value of the same key.
void set_field(ContextFields& fields, const std::string& key, const std::string& value);

/// The CPU model in /proc/cpuinfo's text: its "model name", or on Arm cores (which have none)
/// "arm implementer I part P variant V revision R" from their fields; "unknown" otherwise.
std::string cpu_model_from(const std::string& cpuinfo);

/// The CPU model as /proc/cpuinfo names it (cpu_model_from; "unknown" where it cannot be read).
std::string cpu_model();

/// Logical cores this process may run on (its affinity mask), at least 1.
int usable_cores();

}  // namespace perf
}  // namespace rfa
