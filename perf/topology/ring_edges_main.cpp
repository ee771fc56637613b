// SPDX-License-Identifier: BSD-3-Clause
// rfa_ring_edges: counts the ring edges that leave a node or change socket, for identity and
// topology order.
//
//   mpiexec -n 8 rfa_ring_edges [--gpu-bus-id-env VAR] [--show-order]   the real job
//   rfa_ring_edges --simulate 4x4 --placement cyclic [--show-order]     an imaginary job
//
// In the real job the order is chosen as the library chooses it (choose_ring_order with the
// DEFAULT policy, so RFA_RING_ORDER and RFA_TOPO_DUMP apply): every rank contributes its key
// (host, hwloc binding, NIC, Slurm address; a GPU PCI bus id when --gpu-bus-id-env names a
// variable holding it) and rank 0 prints identity, topology and the chosen order's edges.
#include <mpi.h>

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

#include "core/error.hpp"
#include "ring_edges_report.hpp"
#include "topology/choose_ring_order.hpp"
#include "topology/simulated_placement.hpp"

namespace {

struct Arguments {
  std::string simulate;  // "NODESxGPUS", empty for the real job
  std::string placement = "block";
  std::string gpu_bus_id_env;
  bool show_order = false;
  bool help = false;
};

const char* kUsage =
    "usage: rfa_ring_edges [--simulate NODESxGPUS [--placement cyclic|block]] [--show-order]\n"
    "                      [--gpu-bus-id-env VAR]\n";

const char* kHelp =
    "\nCounts the ring edges that leave a node or change socket, for identity and topology order.\n"
    "Under mpiexec/srun it reports the real job (the order chosen as the library chooses it, so\n"
    "RFA_RING_ORDER and RFA_TOPO_DUMP apply); with --simulate an imaginary one, without MPI ranks.\n\n"
    "  --simulate NODESxGPUS  an imaginary job of NODES nodes with GPUS GPUs each\n"
    "  --placement P          cyclic | block: how the imaginary ranks are dealt to nodes (default block)\n"
    "  --show-order           also print the chosen ring order\n"
    "  --gpu-bus-id-env VAR   the environment variable holding this rank's GPU PCI bus id\n"
    "  --help                 this text\n";

Arguments parse_arguments(int argc, char** argv) {
  Arguments args;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    auto value = [&]() -> std::string {
      rfa::require(i + 1 < argc, "rfa_ring_edges: ", flag, " needs a value\n", kUsage);
      return argv[++i];
    };
    if (flag == "--help" || flag == "-h") {
      args.help = true;
    } else if (flag == "--simulate") {
      args.simulate = value();
    } else if (flag == "--placement") {
      args.placement = value();
    } else if (flag == "--gpu-bus-id-env") {
      args.gpu_bus_id_env = value();
    } else if (flag == "--show-order") {
      args.show_order = true;
    } else {
      rfa::fail(RFA_ERROR_INVALID_ARGUMENT, "rfa_ring_edges: unknown argument '", flag, "'\n", kUsage);
    }
  }
  return args;
}

int run(const Arguments& args, int rank) {
  using namespace rfa::topology;
  if (args.help) {
    if (rank == 0) std::cout << kUsage << kHelp;
    return 0;
  }
  if (!args.simulate.empty()) {
    int nodes = 0, gpus = 0;
    parse_shape(args.simulate, nodes, gpus);
    const Placement placement = parse_placement(args.placement);
    if (rank == 0) {
      print_edge_report(std::cout, "simulated " + args.simulate + " " + args.placement,
                        simulate_keys(nodes, gpus, placement), args.show_order);
    }
    return 0;
  }
  RingOrderOptions options;  // policy DEFAULT: RFA_RING_ORDER decides, RFA_TOPO_DUMP records
  if (!args.gpu_bus_id_env.empty() && std::getenv(args.gpu_bus_id_env.c_str())) {
    options.gpu_pci_bus_id = std::getenv(args.gpu_bus_id_env.c_str());
  }
  const RingOrder chosen = choose_ring_order(MPI_COMM_WORLD, options);
  if (rank == 0) print_edge_report(std::cout, "this job", chosen.keys, args.show_order, &chosen);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int status = 0;
  try {
    status = run(parse_arguments(argc, argv), rank);
  } catch (const rfa::Error& e) {
    // Arguments are the same on every rank, so every rank fails alike; rank 0 speaks.
    // Errors of choose_ring_order are agreed across ranks too.
    if (rank == 0) std::cerr << e.what() << '\n';
    status = 2;
  }
  MPI_Finalize();
  return status;
}
