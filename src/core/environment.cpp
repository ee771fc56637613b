// SPDX-License-Identifier: BSD-3-Clause
// Compiled for the baseline x86-64 (src/CMakeLists.txt: the rfa_core_baseline object library):
// a creation on a CPU the build refuses reads its deadline here (capi/refused_creation.hpp).
#include "core/environment.hpp"

#include <locale.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/error.hpp"

extern char** environ;  // POSIX: the process's environment

namespace rfa {
namespace {

const EnvVariable kRegistry[] = {
    {Env::ring_order, "RFA_RING_ORDER", "librfa", "`topo`",
     "`identity`, `topo` (or `topology`) or `file:PATH`: overrides `options.ring_order` when it is left at its "
     "default; must be alike on every rank, spelled alike"},
    {Env::topo_dump, "RFA_TOPO_DUMP", "librfa", "no file",
     "rank 0 writes the topology keys and the chosen ring order to this JSON file"},
    {Env::timeout_s, "RFA_TIMEOUT_S", "librfa", "`600`",
     "the deadline, in seconds, of every blocking MPI operation, of the staged transport's copies between the "
     "device and pinned memory, and of every wait for a CUDA context's stream, when `options.timeout_s` is 0 "
     "(`0`: none); the deadline a context keeps must be alike on every rank"},
    {Env::wait_spin_ms, "RFA_WAIT_SPIN_MS", "librfa", "`50`; `2` where a node's ranks outnumber its CPUs",
     "how long, in milliseconds, a rank waiting for MPI polls without pause before it naps 0.2 ms between polls; "
     "`0` naps at once"},
    {Env::max_kept_communicators, "RFA_MAX_KEPT_COMMUNICATORS", "librfa", "`1000`",
     "how many MPI communicators of timed-out calls (never freed) a process may keep before `rfa_context_create` "
     "refuses on every rank with `RFA_ERROR_INVALID_USAGE`, so that no rank runs out of communicators in a "
     "creation's splits (Open MPI holds 65,532, MPICH 2,048); 1 to 1000000"},
    {Env::check_values, "RFA_CHECK_VALUES", "librfa", "`0`",
     "`1`: check every call's inputs and outputs for NaN and infinity when `options.check_values` is left at "
     "its default; `0`: no checks"},
    {Env::cuda_kernels, "RFA_CUDA_KERNELS", "librfa (CUDA contexts)", "`auto`",
     "`auto`, `rfa` or `cudnn`: what the ring steps of a CUDA context run on when `options.cuda_kernels` is left "
     "at its default (`auto`: cuDNN where every rank can load it, except under the KV all-gather, which computes on "
     "rfa's kernels; else rfa's)"},
    {Env::cuda_path, "RFA_CUDA_KERNEL_PATH", "librfa (CUDA contexts)", "`auto`",
     "`auto`, `sm80` or `sm90`: the implementation of rfa's CUDA kernels, forward and backward (`auto`: the Hopper "
     "forward and the sm_80 backward where every rank runs the Hopper kernels, else sm80; `sm90`, the Hopper path for "
     "both, needs a build with it and compute capability 9.x on every rank); alike on every rank"},
    {Env::cudnn_library, "RFA_CUDNN_LIBRARY", "librfa (cuDNN kernels)", "`libcudnn.so.9`",
     "the cuDNN library file to load, instead of `libcudnn.so.9` from the loader's search path"},
    {Env::nccl_timeout_s, "RFA_NCCL_TIMEOUT_S", "librfa (NCCL)", "`300`",
     "how long, in seconds, an NCCL operation may take before the communicator is aborted, when `options.timeout_s` is "
     "0"},
    {Env::transport, "RFA_TRANSPORT", "librfa (CUDA contexts)", "`nccl` where built with NCCL, else `mpi`",
     "`nccl` or `mpi`: overrides `options.transport`; alike on every rank"},
    {Env::mpi_cuda_aware, "RFA_MPI_CUDA_AWARE", "librfa (CUDA contexts)", "what MPI reports",
     "`0` stages device buffers through host memory even when MPI says it is CUDA-aware (`0` or `1`)"},
    {Env::host_amx, "RFA_HOST_AMX", "librfa", "`1`",
     "`0` keeps bf16 off the AMX tiles even where the build and CPU have them: it then runs on AVX512-BF16 dot "
     "products where `RFA_HOST_BF16_DOT` allows, else on the portable host kernels (`0` or `1`; a context reads it "
     "at its creation)"},
    {Env::host_bf16_dot, "RFA_HOST_BF16_DOT", "librfa", "`1`",
     "`0` keeps bf16 off AVX512-BF16 dot products (the portable host kernels, fp32 accuracy in the backward "
     "too) even where the build and CPU have them (`0` or `1`; a context reads it at its creation)"},
    {Env::plan_kernel_rate, "RFA_PLAN_KERNEL_RATE", "librfa (`RFA_STRATEGY_AUTO`), `rfa_run --strategy auto`",
     "the device's preset (docs/performance-model.md)",
     "`FWD,BWD`: one rank's kernel rate in GFLOP/s, forward and backward, each from 0.001 to 1e9, that the "
     "automatic strategy plans with (on the host a call's cost per row follows it: the preset's FLOPs per row at "
     "this rate, divided by the preset's bf16 speed-up where the bf16 products run the dtype, their rows costing "
     "the portable kernels'); alike on every rank"},
    {Env::plan_links, "RFA_PLAN_LINKS", "librfa (`RFA_STRATEGY_AUTO`), `rfa_run --strategy auto`",
     "the device's preset (docs/performance-model.md)",
     "`GBPS,US,GBPS,US`: bandwidth (GB/s) and latency (us) inside a node, then between nodes (or "
     "`GBPS,US,NS,GBPS,US,NS` with the CPU nanoseconds a byte's transfer costs the cores at its ends, a host TCP "
     "stack's, or `GBPS,US,NS,BYTES,GBPS,US,NS,BYTES` with that and the bytes a token-bucket-shaped link passes at "
     "once after a pause), that the automatic strategy plans with: bandwidths from 1e-6 to 1e6 GB/s, latencies "
     "from 0 to 1e7 us, CPU costs from 0 to 1e6 ns a byte, bursts from 0 to 1e15 bytes; alike on every rank"},
    {Env::plan_measure, "RFA_PLAN_MEASURE", "librfa (`RFA_STRATEGY_AUTO`), `rfa_run --strategy auto`",
     "`0` on one host, `15` where the ranks span several hosts",
     "`PCT`: the automatic strategy times a forward and backward pass of each plan the model predicts within PCT "
     "percent of its best (at most 6; none starts after 60 s of measuring) on the context's shapes at creation, "
     "and takes the fastest; `0`: the model alone; alike on every rank"},
    {Env::ompi_local_rank, "OMPI_COMM_WORLD_LOCAL_RANK", "librfa", "`MPI_LOCALRANKID`",
     "the node-local rank when MPI cannot tell it (before `MPI_Init`), as Open MPI's mpiexec sets it; first of the "
     "three; a value that is not a whole number from 0 to 2147483647 is refused"},
    {Env::mpich_local_rank, "MPI_LOCALRANKID", "librfa", "`SLURM_LOCALID`",
     "the same as MPICH's and Intel MPI's launchers set it; second of the three"},
    {Env::slurm_localid, "SLURM_LOCALID", "librfa", "`0`",
     "the same as srun sets it for the tasks it starts (processes an `mpiexec` inside the job starts inherit "
     "the launching step's); last of the three"},
    {Env::slurm_topology_addr, "SLURM_TOPOLOGY_ADDR", "librfa", "no switch path",
     "this node's switch path, set by srun for every step (the NodeName alone without switch information), "
     "used to order the ring's nodes"},
    {Env::test_hostname, "RFA_TEST_HOSTNAME", "librfa (tests only)", "the real host name",
     "a host name that replaces the real one in the ring-order tests"},
};
constexpr std::size_t kCount = sizeof kRegistry / sizeof kRegistry[0];

}  // namespace

const EnvVariable* env_registry(std::size_t* count) {
  *count = kCount;
  return kRegistry;
}

const EnvVariable& env_variable(Env id) {
  for (const EnvVariable& v : kRegistry)
    if (v.id == id) return v;
  fail(RFA_ERROR_INTERNAL, "environment variable ", int(id), " is not in the registry");
}

const char* env_name(Env id) { return env_variable(id).name; }

const char* env_value(Env id) { return std::getenv(env_variable(id).name); }

bool parse_decimal(const char* text, double* value) noexcept {
  // A digit or a point first, and no hexadecimal: strtod would also take leading blanks, a
  // sign, "inf", "nan" and 0x1p4.
  if (text == nullptr || ((*text < '0' || *text > '9') && *text != '.')) return false;
  if (std::strchr(text, 'x') != nullptr || std::strchr(text, 'X') != nullptr) return false;
  // The "C" locale's numeric rules, made once; where it cannot be made, the process's.
  static const locale_t c_numeric = newlocale(LC_NUMERIC_MASK, "C", locale_t(0));
  char* end = nullptr;
  errno = 0;
  const double read = c_numeric ? strtod_l(text, &end, c_numeric) : std::strtod(text, &end);
  // ERANGE: a value too small for a double (1e-400) reads as 0, which would mean another thing
  // (no deadline, say); too large, as infinity.
  if (end == text || *end != '\0' || errno == ERANGE) return false;
  *value = read;
  return true;
}

bool parse_timeout_seconds(const char* text, double* seconds) noexcept {
  double value = 0.0;
  if (!parse_decimal(text, &value) || !(value >= 0.0) || value > 1e9) return false;
  *seconds = value;
  return true;
}

bool parse_whole_number(const char* text, long long least, long long most, long long* value) noexcept {
  if (text == nullptr || *text < '0' || *text > '9') return false;  // strtoll would skip blanks and take a sign
  char* end = nullptr;
  errno = 0;
  const long long read = std::strtoll(text, &end, 10);
  if (*end != '\0' || errno == ERANGE || read < least || read > most) return false;
  *value = read;
  return true;
}

std::string env_text(Env id) {
  const char* v = env_value(id);
  return v ? v : "";
}

void require_switch_value(Env id) {
  const std::string v = env_text(id);
  if (v.empty() || v == "0" || v == "1") return;
  fail(RFA_ERROR_INVALID_ARGUMENT, env_name(id), " is '", v, "'; it must be 0 (off) or 1 (on), or unset");
}

std::string env_with_prefix(const char* prefix) {
  const std::size_t n = std::strlen(prefix);
  std::vector<std::string> found;
  for (char** e = environ; e && *e; ++e) {
    if (std::strncmp(*e, prefix, n) == 0) found.emplace_back(*e);
  }
  std::sort(found.begin(), found.end());
  std::string lines;
  for (const std::string& f : found) lines += f + "\n";
  return lines;
}

}  // namespace rfa
