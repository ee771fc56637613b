// SPDX-License-Identifier: BSD-3-Clause
#include "run_context.hpp"

#if RFA_PERF_HAVE_MPI
#include <mpi.h>
#endif

#include <Kokkos_Core.hpp>

#include "rfa/rfa_version.h"
#if RFA_PERF_HAVE_HWLOC
#include <hwloc.h>
#endif

namespace rfa {
namespace perf {
namespace {

std::string mpi_library_version() {
#if !RFA_PERF_HAVE_MPI
  return "none";
#else
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {0};
  int length = 0;
  MPI_Get_library_version(text, &length);
  std::string v(text, std::size_t(length > 0 ? length : 0));
  const auto end = v.find_first_of(",\n");  // Open MPI appends its repository and date
  return end == std::string::npos ? v : v.substr(0, end);
#endif
}

std::string kokkos_backends() {
  std::string b;
  auto add = [&b](const char* name) { b += (b.empty() ? "" : "+") + std::string(name); };
#ifdef KOKKOS_ENABLE_SERIAL
  add("Serial");
#endif
#ifdef KOKKOS_ENABLE_OPENMP
  add("OpenMP");
#endif
#ifdef KOKKOS_ENABLE_THREADS
  add("Threads");
#endif
#ifdef KOKKOS_ENABLE_CUDA
  add("Cuda");
#endif
#ifdef KOKKOS_ENABLE_HIP
  add("HIP");
#endif
  return b.empty() ? "unknown" : b;
}

std::string kokkos_version() {
  const int v = KOKKOS_VERSION;  // MMmmpp
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}

std::string hwloc_version() {
#if RFA_PERF_HAVE_HWLOC
  const unsigned v = hwloc_get_api_version();
  return std::to_string(v >> 16) + "." + std::to_string((v >> 8) & 0xff) + "." + std::to_string(v & 0xff);
#else
  return "none";
#endif
}

int recorded_node_count = 1;

}  // namespace

void set_node_count(int nodes) { recorded_node_count = nodes; }

ContextFields collect_run_context(const std::string& program) {
  ContextFields c = collect_machine_context(program);
  set_field(c, "rfa_version", RFA_VERSION_STRING);
  set_field(c, "kokkos_version", kokkos_version());
  set_field(c, "kokkos_backends", kokkos_backends());
  set_field(c, "mpi_version", mpi_library_version());
  set_field(c, "nccl_version", RFA_PERF_NCCL_VERSION);
  set_field(c, "cuda_version", RFA_PERF_CUDA_VERSION);
  set_field(c, "hwloc_version", hwloc_version());
  set_field(c, "nodes", std::to_string(recorded_node_count));
  return c;
}

}  // namespace perf
}  // namespace rfa
