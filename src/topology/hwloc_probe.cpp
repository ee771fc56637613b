// SPDX-License-Identifier: BSD-3-Clause
#include "topology/hwloc_probe.hpp"

#include <hwloc.h>

#include <algorithm>
#include <cstring>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/environment.hpp"

namespace rfa::topology {
namespace {

// Owns a loaded topology (with the I/O devices that matter: GPUs, NICs and their PCI path).
// Loading one reads every PCI device's configuration from sysfs, milliseconds to tens of them
// per load (perf/RESULTS.md, "2026-12-01 — context creation: hwloc's topology loaded once per
// process").
class LoadedTopology {
 public:
  LoadedTopology() {
    if (hwloc_topology_init(&topology_) != 0) {
      topology_ = nullptr;
      return;
    }
    hwloc_topology_set_io_types_filter(topology_, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
#if HWLOC_API_VERSION >= 0x00020100
    // rfa reads PCI devices and network and OpenFabrics OS devices only. The plugins that find
    // displays and accelerators are left out: `gl` probes X displays :0 to :9 (with a TCP
    // fallback to localhost, which waits seconds on DNS where "localhost" does not resolve
    // locally), `cuda` and `nvml` initialize the driver. A plugin that is not installed is
    // refused here, which changes nothing.
    for (const char* name : {"gl", "opencl", "cuda", "nvml", "rsmi", "levelzero"})
      hwloc_topology_set_components(topology_, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, name);
#endif
    if (hwloc_topology_load(topology_) != 0) {
      hwloc_topology_destroy(topology_);
      topology_ = nullptr;
    }
  }
  ~LoadedTopology() {
    if (topology_) hwloc_topology_destroy(topology_);
  }
  LoadedTopology(const LoadedTopology&) = delete;
  LoadedTopology& operator=(const LoadedTopology&) = delete;
  hwloc_topology_t get() const { return topology_; }

 private:
  hwloc_topology_t topology_ = nullptr;
};

class Bitmap {
 public:
  Bitmap() : bitmap_(hwloc_bitmap_alloc()) {}
  ~Bitmap() { hwloc_bitmap_free(bitmap_); }
  Bitmap(const Bitmap&) = delete;
  Bitmap& operator=(const Bitmap&) = delete;
  hwloc_bitmap_t get() const { return bitmap_; }

 private:
  hwloc_bitmap_t bitmap_;
};

// The CPUs this process may run on: its binding, else (binding unreadable) the whole machine.
void read_cpu_binding(hwloc_topology_t topology, hwloc_bitmap_t set) {
  if (hwloc_get_cpubind(topology, set, HWLOC_CPUBIND_PROCESS) == 0 && !hwloc_bitmap_iszero(set)) return;
  if (hwloc_get_cpubind(topology, set, HWLOC_CPUBIND_THREAD) == 0 && !hwloc_bitmap_iszero(set)) return;
  hwloc_bitmap_copy(set, hwloc_topology_get_topology_cpuset(topology));
}

// OS index of the one object of this type whose CPUs intersect the set; -1 when none or
// several do (an unpinned process on a two-socket node belongs to neither socket). For
// packages: NUMA nodes go by local_numa_node.
int only_intersecting(hwloc_topology_t topology, hwloc_obj_type_t type, hwloc_const_bitmap_t set) {
  int found = -1, count = 0;
  for (hwloc_obj_t obj = hwloc_get_next_obj_by_type(topology, type, nullptr); obj;
       obj = hwloc_get_next_obj_by_type(topology, type, obj)) {
    if (obj->cpuset && hwloc_bitmap_intersects(obj->cpuset, set)) {
      ++count;
      found = obj->os_index == HWLOC_UNKNOWN_INDEX ? -1 : static_cast<int>(obj->os_index);
    }
  }
  return count == 1 ? found : -1;
}

// The normal object a NUMA node hangs off (past any memory-side cache between them).
hwloc_obj_t attached_to(hwloc_obj_t numa) {
  hwloc_obj_t parent = numa->parent;
  while (parent && hwloc_obj_type_is_memory(parent->type)) parent = parent->parent;
  return parent;
}

// Whether a NUMA node holds the machine's ordinary memory: hwloc names DRAM "DRAM" where a
// machine mixes kinds (from 2.9) and gives no subtype where it does not; HBM, NVM, CXL and GPU
// memory nodes carry other names.
bool plain_memory(hwloc_obj_t numa) { return numa->subtype == nullptr || std::strcmp(numa->subtype, "DRAM") == 0; }

// OS index of the NUMA node local to the CPUs in `set`: among the NUMA nodes attached to the
// smallest object that covers the set, or else to its nearest ancestor that has any, the
// plain-memory one of lowest OS index (any, where none is plain); -1 when no such ancestor
// short of the whole machine has one (an unpinned process on a two-socket node belongs to
// neither socket's node). Counting the NUMA nodes whose CPUs meet the set would not do: a
// memory-only node (HBM beside DRAM, CXL, a GH200's GPU memory) shares its CPUs with the DRAM
// node, so two would meet every binding.
int local_numa_node(hwloc_topology_t topology, hwloc_const_bitmap_t set) {
  const hwloc_obj_t root = hwloc_get_root_obj(topology);
  const int all_nodes = hwloc_get_nbobjs_by_type(topology, HWLOC_OBJ_NUMANODE);
  for (hwloc_obj_t obj = hwloc_get_obj_covering_cpuset(topology, set); obj; obj = obj->parent) {
    if (obj->memory_arity == 0) continue;
    int best = -1, attached = 0;
    bool best_plain = false;
    for (hwloc_obj_t numa = hwloc_get_next_obj_by_type(topology, HWLOC_OBJ_NUMANODE, nullptr); numa;
         numa = hwloc_get_next_obj_by_type(topology, HWLOC_OBJ_NUMANODE, numa)) {
      if (attached_to(numa) != obj) continue;
      ++attached;
      if (numa->os_index == HWLOC_UNKNOWN_INDEX) continue;
      const bool plain = plain_memory(numa);
      const int index = static_cast<int>(numa->os_index);
      if (best < 0 || (plain && !best_plain) || (plain == best_plain && index < best)) {
        best = index;
        best_plain = plain;
      }
    }
    // Memory at the machine's own level is near every CPU: it tells nothing where the machine
    // has more than that (a node's own DRAM below its sockets).
    if (obj == root && attached < all_nodes) return -1;
    return best;
  }
  return -1;
}

// Tree distance between two objects: hops up from a to the first common ancestor, plus hops
// up from b to it. Walks parent pointers, so I/O objects (PCI devices, OS devices) work too.
int tree_hops(hwloc_obj_t a, hwloc_obj_t b) {
  std::vector<hwloc_obj_t> ancestors_of_a;
  for (hwloc_obj_t o = a; o; o = o->parent) ancestors_of_a.push_back(o);
  int hops_b = 0;
  for (hwloc_obj_t o = b; o; o = o->parent, ++hops_b) {
    auto it = std::find(ancestors_of_a.begin(), ancestors_of_a.end(), o);
    if (it != ancestors_of_a.end()) return static_cast<int>(it - ancestors_of_a.begin()) + hops_b;
  }
  return 1 << 30;  // different trees: cannot happen within one topology
}

// The network device closest to `from`. Ties go to OpenFabrics devices (the HPC fabric: mlx5_0
// rather than its Ethernet twin), then to the name, so the choice is deterministic.
std::string nearest_nic(hwloc_topology_t topology, hwloc_obj_t from) {
  std::string best;
  int best_hops = 0;
  bool best_fabric = false;
  for (hwloc_obj_t dev = hwloc_get_next_osdev(topology, nullptr); dev; dev = hwloc_get_next_osdev(topology, dev)) {
    const auto type = dev->attr->osdev.type;
    if (type != HWLOC_OBJ_OSDEV_NETWORK && type != HWLOC_OBJ_OSDEV_OPENFABRICS) continue;
    if (!dev->name) continue;
    const int hops = tree_hops(from, dev);
    const bool fabric = type == HWLOC_OBJ_OSDEV_OPENFABRICS;
    const bool better = best.empty() || hops < best_hops || (hops == best_hops && fabric && !best_fabric) ||
                        (hops == best_hops && fabric == best_fabric && dev->name < best);
    if (better) {
      best = dev->name;
      best_hops = hops;
      best_fabric = fabric;
    }
  }
  return best;
}

// The topology of this process's machine, loaded at its first use and kept to the process's end:
// every context creation probes it, and the machine does not change under a process. hwloc's
// own variables (HWLOC_XMLFILE, HWLOC_SYNTHETIC, ...) choose what it loads, so a topology is
// kept for each setting of them (tests load made-up nodes from XML in one process). The caller
// holds topology_mutex() while it uses the topology.
std::mutex& topology_mutex() {
  static std::mutex mutex;
  return mutex;
}

int loads = 0;  // guarded by topology_mutex()

hwloc_topology_t machine_topology() {
  static std::map<std::string, std::unique_ptr<LoadedTopology>> loaded;
  std::unique_ptr<LoadedTopology>& slot = loaded[env_with_prefix("HWLOC_")];
  if (!slot) {
    slot = std::make_unique<LoadedTopology>();
    ++loads;
  }
  return slot->get();
}

}  // namespace

HwlocPlacement probe_hwloc(const std::string& gpu_pci_bus_id) {
  HwlocPlacement placement;
  const std::lock_guard<std::mutex> lock(topology_mutex());
  hwloc_topology_t topology = machine_topology();
  if (!topology) return placement;
  placement.loaded = true;

  Bitmap binding;
  read_cpu_binding(topology, binding.get());
  placement.numa_node = local_numa_node(topology, binding.get());
  placement.package = only_intersecting(topology, HWLOC_OBJ_PACKAGE, binding.get());

  hwloc_obj_t gpu =
      gpu_pci_bus_id.empty() ? nullptr : hwloc_get_pcidev_by_busidstring(topology, gpu_pci_bus_id.c_str());
  placement.gpu_found = gpu != nullptr;
  if (gpu && (placement.numa_node < 0 || placement.package < 0)) {
    // The process may run anywhere, but its GPU hangs off one socket: order by the GPU.
    hwloc_obj_t local = hwloc_get_non_io_ancestor_obj(topology, gpu);
    if (local && local->cpuset) {
      placement.numa_node = local_numa_node(topology, local->cpuset);
      placement.package = only_intersecting(topology, HWLOC_OBJ_PACKAGE, local->cpuset);
      placement.locality_from_gpu = true;
    }
  }

  hwloc_obj_t from = gpu ? gpu : hwloc_get_obj_covering_cpuset(topology, binding.get());
  if (!from) from = hwloc_get_root_obj(topology);
  placement.nic = nearest_nic(topology, from);
  return placement;
}

int hwloc_topologies_loaded() {
  const std::lock_guard<std::mutex> lock(topology_mutex());
  return loads;
}

}  // namespace rfa::topology
