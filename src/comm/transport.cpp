// SPDX-License-Identifier: BSD-3-Clause
#include "comm/transport.hpp"

#include <cstdlib>

#include "core/environment.hpp"
#include "core/error.hpp"

namespace rfa::comm {

const char* transport_name(TransportChoice t) {
  switch (t) {
    case TransportChoice::mpi: return "mpi";
    case TransportChoice::nccl: return "nccl";
    default: return "auto";
  }
}

TransportChoice resolve_transport(TransportChoice option, bool nccl_built) {
  TransportChoice t = option;
  if (const char* env = env_value(Env::transport); env && *env) {
    const std::string v = env;
    if (v == "nccl")
      t = TransportChoice::nccl;
    else if (v == "mpi")
      t = TransportChoice::mpi;
    else
      fail(RFA_ERROR_INVALID_ARGUMENT, "RFA_TRANSPORT is '", v, "'; it must be 'nccl' or 'mpi' (or unset)");
  }
  if (t == TransportChoice::automatic) t = nccl_built ? TransportChoice::nccl : TransportChoice::mpi;
  if (t == TransportChoice::nccl && !nccl_built) {
    fail(RFA_ERROR_UNSUPPORTED,
         "the NCCL transport was asked for but this build of rfa has no NCCL; use "
         "RFA_TRANSPORT=mpi or rebuild with -DRFA_ENABLE_NCCL=ON");
  }
  return t;
}

SharedGpu find_shared_gpu(const std::vector<GpuPlacement>& ranks) {
  for (std::size_t a = 0; a < ranks.size(); ++a) {
    if (ranks[a].pci_bus_id.empty()) continue;
    for (std::size_t b = a + 1; b < ranks.size(); ++b)
      if (ranks[b].host == ranks[a].host && ranks[b].pci_bus_id == ranks[a].pci_bus_id) return {int(a), int(b)};
  }
  return {};
}

std::string shared_gpu_message(const std::vector<GpuPlacement>& ranks, SharedGpu shared) {
  const GpuPlacement& g = ranks.at(std::size_t(shared.first));
  return "ranks " + std::to_string(shared.first) + " and " + std::to_string(shared.second) + " share the GPU " +
         g.pci_bus_id + " on host " + g.host +
         ", and NCCL cannot run several ranks on one GPU: set RFA_TRANSPORT=mpi (or options.transport = "
         "RFA_TRANSPORT_MPI) to share a GPU over MPI, or give every rank its own GPU";
}

}  // namespace rfa::comm
