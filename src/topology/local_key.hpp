// SPDX-License-Identifier: BSD-3-Clause
// Building this rank's key from the host name, the environment and (when built in) hwloc.
#pragma once

#include <string>

#include "topology/rank_key.hpp"

namespace rfa::topology {

/// Environment variable that replaces the host name in the key. TEST-ONLY: it lets one machine
/// pretend to be several nodes under mpiexec. Never set it in a real job: ranks that share a
/// node but claim different hosts get a ring that crosses the "node" boundaries needlessly.
inline constexpr const char* kTestHostnameEnv = "RFA_TEST_HOSTNAME";

/// Slurm's address of the node in the network topology (topology/tree plugin), e.g. "s0.s3.n12".
inline constexpr const char* kSlurmTopologyAddrEnv = "SLURM_TOPOLOGY_ADDR";

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
std::string local_host_name();

}  // namespace rfa::topology
