// SPDX-License-Identifier: BSD-3-Clause
#include "topology/choose_ring_order.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "collective/agree_on_failure.hpp"
#include "collective/bounded_collectives.hpp"
#include "collective/mpi_error.hpp"
#include "core/environment.hpp"
#include "core/error.hpp"
#include "core/text_file.hpp"
#include "topology/gather_keys.hpp"
#include "topology/local_key.hpp"
#include "topology/order_policy.hpp"
#include "topology/ring_order.hpp"
#include "topology/topo_json.hpp"

namespace rfa::topology {
namespace {

// Rank 0 reads and checks the file; everyone gets the order or rank 0's error.
std::vector<int> read_order_file(MPI_Comm comm, int rank, int size, const std::string& path) {
  std::vector<int> order;
  collective::agree_on_failure(comm, [&] {
    if (rank == 0) order = parse_order_text(order_file_text(path), size, path);
  });
  collective::broadcast_ints(comm, order, 0);
  return order;
}

void write_dump(MPI_Comm comm, int rank, const RingOrder& ring) {
  const std::string path = rank == 0 ? env_text(Env::topo_dump) : "";
  collective::agree_on_failure(comm, [&] {
    if (path.empty()) return;
    write_text_file(path, to_json(ring) + '\n', std::string("rfa topology: ") + env_name(Env::topo_dump));
  });
}

// The options decide which collectives follow, so ranks that disagree on them would call
// different collectives and hang: check first, with one reduction every rank gets alike.
void require_same_options(MPI_Comm comm, const RingOrderOptions& options) {
  int mine[2] = {static_cast<int>(options.policy), options.order_file.empty() ? 0 : 1};
  int low[2], high[2];
  std::copy(mine, mine + 2, low);
  std::copy(mine, mine + 2, high);
  collective::allreduce_within(comm, low, 2, MPI_INT, MPI_MIN, "rfa topology: the ring order options (MPI_Iallreduce)");
  collective::allreduce_within(comm, high, 2, MPI_INT, MPI_MAX,
                               "rfa topology: the ring order options (MPI_Iallreduce)");
  if (low[0] != high[0]) {
    fail(RFA_ERROR_INVALID_USAGE, "rfa topology: ranks asked for different ring order policies (",
         policy_name(static_cast<rfa_ring_order_t>(low[0])), " and ",
         policy_name(static_cast<rfa_ring_order_t>(high[0])), "); pass the same policy on every rank");
  }
  if (low[1] != high[1]) {
    fail(RFA_ERROR_INVALID_USAGE, "rfa topology: some ranks name a ring order file and others do not");
  }
}

}  // namespace

RingOrder choose_ring_order(MPI_Comm comm, const RingOrderOptions& options) {
  int rank = 0, size = 1;
  collective::check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  collective::check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size");

  require_same_options(comm, options);

  // The variable is read (and checked to agree across ranks) only when it can matter.
  const bool env_matters =
      options.policy == RFA_RING_ORDER_DEFAULT || (options.policy == RFA_RING_ORDER_FILE && options.order_file.empty());
  const std::string env_value = env_matters ? collective::agreed_env(comm, Env::ring_order) : "";
  PolicyChoice choice;
  collective::agree_on_failure(comm, [&] { choice = resolve_policy(options.policy, env_value, options.order_file); });

  RankKey local;
  collective::agree_on_failure(comm, [&] { local = make_local_key({options.gpu_pci_bus_id, true}); });

  RingOrder ring;
  ring.keys = gather_keys(comm, local);
  ring.policy_used = choice.policy;
  switch (choice.policy) {
    case RFA_RING_ORDER_FILE:
      ring.order = read_order_file(comm, rank, size, choice.file);
      ring.order_file = choice.file;
      break;
    case RFA_RING_ORDER_TOPOLOGY:
      ring.order = compute_ring_order(ring.keys);
      if (!is_single_cycle(ring.order)) {
        // Every rank computed the same order from the same keys, so every rank falls back alike.
        if (rank == 0) {
          std::fprintf(stderr,
                       "rfa topology: warning: the topology ring order is not one cycle over the %d "
                       "ranks; using identity order (please report this as a bug)\n",
                       size);
        }
        ring.order = identity_order(size);
        ring.policy_used = RFA_RING_ORDER_IDENTITY;
      }
      break;
    default: ring.order = identity_order(size); break;
  }
  ring.position = ring_position(ring.order, rank);
  write_dump(comm, rank, ring);
  return ring;
}

RingOrder choose_ring_order(MPI_Comm comm, rfa_ring_order_t policy, const std::string& gpu_pci_bus_id) {
  RingOrderOptions options;
  options.policy = policy;
  options.gpu_pci_bus_id = gpu_pci_bus_id;
  return choose_ring_order(comm, options);
}

}  // namespace rfa::topology
