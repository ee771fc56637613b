// SPDX-License-Identifier: BSD-3-Clause
// The frame the MPI programs of perf/ run in: MPI and Kokkos set up and torn down around the body,
// SIGPIPE ignored, the ranks' node count recorded for the results' context, and an rfa::Error, an unwritable results
// file or a refused option value that escapes it reported with the program's name and the rank.
#pragma once

#include <mpi.h>

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <set>
#include <string>
#include <vector>

#include "command_line.hpp"
#include "core/error.hpp"
#include "result_json.hpp"
#include "run_context.hpp"
#if defined(KOKKOS_ENABLE_CUDA)
#include "device/select_device.hpp"
#endif

namespace rfa {
namespace perf {

/// How many nodes the ranks of `comm` run on: their distinct host names (MPI processor names).
/// Collective over `comm`.
inline int count_nodes(MPI_Comm comm) {
  char name[MPI_MAX_PROCESSOR_NAME] = {0};
  int length = 0;
  MPI_Get_processor_name(name, &length);
  int size = 1;
  MPI_Comm_size(comm, &size);
  std::vector<char> names(std::size_t(size) * MPI_MAX_PROCESSOR_NAME);
  MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, comm);
  std::set<std::string> distinct;
  for (int r = 0; r < size; ++r) {
    const char* own = names.data() + std::size_t(r) * MPI_MAX_PROCESSOR_NAME;
    distinct.emplace(own, std::find(own, own + MPI_MAX_PROCESSOR_NAME, '\0'));
  }
  return int(distinct.size());
}

/// Returns body(world_rank, argc, argv)'s exit code, or 2 after printing (on every rank) an
/// escaped rfa::Error, ResultsFileError or OptionError.
/// The body sees the program's own flags only: Kokkos takes its --kokkos-* flags, and a plain
/// --help is the program's (Kokkos would answer it with its banner and its whole help on
/// every rank). `--kokkos-help` prints Kokkos' help, once, and exits 0.
template <class Body>
int run_mpi_program(int argc, char** argv, const char* name, Body&& body) {
  // A rank whose peer died gets rfa's timeout instead of dying of SIGPIPE in Open MPI's TCP
  // writev() (docs/reliability.md).
  std::signal(SIGPIPE, SIG_IGN);
  MPI_Init(&argc, &argv);
  int world_rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  set_node_count(count_nodes(MPI_COMM_WORLD));  // the results' "nodes"
  static char kokkos_help_flag[] = "--kokkos-help";
  std::vector<char*> kokkos_args = {argv[0]}, program_args = {argv[0]};
  bool kokkos_help = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--kokkos-help") == 0) {
      kokkos_help = true;
      if (world_rank == 0) kokkos_args.push_back(kokkos_help_flag);
    } else if (std::strncmp(argv[i], "--kokkos-", 9) == 0) {
      kokkos_args.push_back(argv[i]);
    } else {
      program_args.push_back(argv[i]);
    }
  }
#if defined(KOKKOS_ENABLE_CUDA)
  // A CUDA-enabled Kokkos needs a GPU even for host runs: take the one of this rank's
  // node-local rank (rfa uses the current device) and tell Kokkos to use the same.
  std::string device_flag;
  try {
    device_flag = "--kokkos-device-id=" + std::to_string(device::select_device_by_local_rank(MPI_COMM_WORLD));
  } catch (const Error& e) {
    std::fprintf(stderr, "%s (rank %d): error: %s\n", name, world_rank, e.what());
    MPI_Finalize();
    return 2;
  }
  kokkos_args.push_back(&device_flag[0]);
#endif
  int kokkos_argc = int(kokkos_args.size());
  kokkos_args.push_back(nullptr);
  Kokkos::initialize(kokkos_argc, kokkos_args.data());
  int rc = 0;
  auto report = [&](const std::exception& e) {
    std::fprintf(stderr, "%s (rank %d): error: %s\n", name, world_rank, e.what());
    return 2;
  };
  if (!kokkos_help) {
    try {
      program_args.push_back(nullptr);
      rc = body(world_rank, int(program_args.size()) - 1, program_args.data());
    } catch (const Error& e) {
      rc = report(e);
    } catch (const ResultsFileError& e) {  // --json to a path that cannot be written
      rc = report(e);
    } catch (const OptionError& e) {  // a number on the command line that its option does not take
      rc = report(e);
    }
  }
  Kokkos::finalize();
  MPI_Finalize();
  return rc;
}

}  // namespace perf
}  // namespace rfa
