// SPDX-License-Identifier: BSD-3-Clause
// The one registry of the environment variables the library reads: each one's name, the part of
// librfa that reads it, what applies when it is unset and what it does. Library code (src/, capi/)
// reads them only through env_value(), and docs/environment.md's library table must repeat this
// registry row for row (tests/readme/env_table_test.py, fed by rfa_env_registry_dump). Variables
// of the tools (quickstart.sh, benchmarks, Slurm templates) are theirs and listed in the docs.
#pragma once

#include <cstddef>
#include <string>

namespace rfa {

enum class Env {
  ring_order,
  topo_dump,
  timeout_s,
  wait_spin_ms,
  max_kept_communicators,
  check_values,
  cuda_kernels,
  cuda_path,
  cudnn_library,
  nccl_timeout_s,
  transport,
  mpi_cuda_aware,
  host_amx,
  plan_kernel_rate,
  plan_links,
  plan_measure,
  host_bf16_dot,
  ompi_local_rank,
  mpich_local_rank,
  slurm_localid,
  slurm_topology_addr,
  test_hostname,
};

struct EnvVariable {
  Env id;
  const char* name;      ///< "RFA_TIMEOUT_S"
  const char* readers;   ///< "librfa", "librfa (NCCL)", ...
  const char* fallback;  ///< what applies when it is unset, as the docs table shows it
  const char* meaning;   ///< one line, as docs/environment.md shows it
};

/// Every registered variable, in the order of docs/environment.md's table.
const EnvVariable* env_registry(std::size_t* count);

/// The registry's entry of `id`.
const EnvVariable& env_variable(Env id);

/// The variable's name ("RFA_TIMEOUT_S"), for messages and tests.
const char* env_name(Env id);

/// The variable's value, or nullptr when it is unset.
const char* env_value(Env id);
/// `text` as a decimal number (`2.5`, `.5`, `1e3`) into `value`, read in the "C" locale whatever
/// the program set with setlocale (under a decimal comma `0.5` would stop at the point); false
/// for anything else (empty, leading blanks or a sign, hexadecimal, inf, nan, trailing
/// characters, beyond a double's range either way). Plain C, compiled for the baseline x86-64
/// with the registry.
bool parse_decimal(const char* text, double* value) noexcept;
/// `text` as a number of seconds from 0 to 1e9 (RFA_TIMEOUT_S's form), into `seconds`; false for
/// anything else (empty, trailing characters, out of range, NaN). Plain C, compiled for the
/// baseline x86-64 with the registry: a creation the CPU check refuses reads its deadline here.
bool parse_timeout_seconds(const char* text, double* seconds) noexcept;

/// `text` as a whole number from `least` to `most` into `value`: decimal digits only (no blanks,
/// sign, fraction or unit, which would otherwise be read as something else); false for anything
/// else (empty, out of range, past long long). The one rule of every integer variable the library
/// reads (RFA_WAIT_SPIN_MS, RFA_MAX_KEPT_COMMUNICATORS, SLURM_LOCALID).
bool parse_whole_number(const char* text, long long least, long long most, long long* value) noexcept;
/// The variable's value, or "" when it is unset.
std::string env_text(Env id);

/// Checks a switch (RFA_HOST_AMX, RFA_HOST_BF16_DOT, RFA_MPI_CUDA_AWARE): unset, empty, `0` or
/// `1`. Throws RFA_ERROR_INVALID_ARGUMENT naming it otherwise (`off`, `false`, ` 0` would
/// otherwise be read as on, silently). Where a switch is read, anything but `0` is on.
void require_switch_value(Env id);

/// Every variable whose name starts with `prefix`, as sorted "NAME=value" lines: another
/// library's own settings (hwloc's HWLOC_*), read only to tell whether they changed.
std::string env_with_prefix(const char* prefix);

}  // namespace rfa
