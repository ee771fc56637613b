// SPDX-License-Identifier: BSD-3-Clause
// Build without hwloc (RFA_ENABLE_HWLOC=OFF): nothing is known beyond host and PCI bus id.
#include "topology/hwloc_probe.hpp"

namespace rfa::topology {

HwlocPlacement probe_hwloc(const std::string&) { return HwlocPlacement{}; }
int hwloc_topologies_loaded() { return 0; }

}  // namespace rfa::topology
