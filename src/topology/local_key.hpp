// SPDX-License-Identifier: BSD-3-Clause
// Building this rank's key from the host name, the environment and (when built in) hwloc.
#pragma once

#include <string>

#include "topology/rank_key.hpp"

namespace rfa::topology {

struct LocalKeyOptions {
  /// PCI bus id of the GPU this rank drives (from cudaDeviceGetPCIBusId or NVML), "" for none.
  std::string gpu_pci_bus_id;
  /// Read NUMA node, package and NIC from hwloc (ignored in a build without hwloc).
  bool use_hwloc = true;
};

/// This rank's key; rank stays -1 until gather_keys() sets it. Throws
/// RFA_ERROR_INVALID_ARGUMENT for a malformed PCI bus id. A topology hwloc cannot load is not
/// an error: the key then carries host and PCI bus id only (flags lacks kKeyFromHwloc).
RankKey make_local_key(const LocalKeyOptions& options = {});

/// The host name this rank reports: RFA_TEST_HOSTNAME when set and non-empty, else gethostname().
/// The override lets one machine pretend to be several nodes in the tests; a real job that sets
/// it gets a ring that crosses the pretended node boundaries needlessly.
std::string local_host_name();

}  // namespace rfa::topology
