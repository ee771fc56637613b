// SPDX-License-Identifier: BSD-3-Clause
// What hwloc can tell about this process's place in the machine. Kept apart from the key so
// that the build without hwloc swaps one small file (hwloc_probe_none.cpp) and nothing else.
#pragma once

#include <string>

namespace rfa::topology {

struct HwlocPlacement {
  bool loaded = false;             ///< an hwloc topology was loaded; the fields below are valid
  int numa_node = -1;              ///< OS index; -1 when unknown or the binding spans several
  int package = -1;                ///< OS index; -1 when unknown or the binding spans several
  bool gpu_found = false;          ///< the given PCI bus id is a PCI device in the topology
  bool locality_from_gpu = false;  ///< numa_node/package come from the GPU (binding spans several)
  std::string nic;                 ///< nearest network/OpenFabrics OS device; "" none seen
};

/// Reads the topology of this machine (with important I/O devices; loaded once per process for
/// each setting of hwloc's HWLOC_* variables) and the CPU binding of this process as it is now.
/// Thread-safe. gpu_pci_bus_id is normalized ("dddd:bb:dd.f") or empty. Never throws for a
/// topology that cannot be loaded: the placement then says loaded = false and the ring order
/// falls back to what the key knows without hwloc (host, PCI bus id).
HwlocPlacement probe_hwloc(const std::string& gpu_pci_bus_id);

/// How many topologies probe_hwloc has loaded in this process so far (what its tests count).
int hwloc_topologies_loaded();

}  // namespace rfa::topology
