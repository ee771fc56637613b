// SPDX-License-Identifier: BSD-3-Clause
#include "topology/local_key.hpp"

#include <unistd.h>

#include <string>

#include "core/environment.hpp"
#include "core/error.hpp"
#include "topology/hwloc_probe.hpp"

namespace rfa::topology {

std::string local_host_name() {
  std::string override_name = env_text(Env::test_hostname);
  if (!override_name.empty()) return override_name;
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) fail(RFA_ERROR_INTERNAL, "rfa topology: gethostname failed");
  return name;
}

RankKey make_local_key(const LocalKeyOptions& options) {
  RankKey key = empty_key();
  set_host(key, local_host_name());
  const std::string bus_id = normalize_pci_bus_id(options.gpu_pci_bus_id);
  set_field(key.pci_bus_id, bus_id);
  set_field(key.slurm_topology_addr, env_text(Env::slurm_topology_addr));

  if (!options.use_hwloc) return key;
  const HwlocPlacement placement = probe_hwloc(bus_id);
  if (!placement.loaded) return key;
  key.flags |= kKeyFromHwloc;
  if (placement.gpu_found) key.flags |= kKeyGpuFound;
  if (placement.locality_from_gpu) key.flags |= kKeyLocalityFromGpu;
  key.numa_node = placement.numa_node;
  key.package = placement.package;
  set_field(key.nic, placement.nic);
  return key;
}

}  // namespace rfa::topology
