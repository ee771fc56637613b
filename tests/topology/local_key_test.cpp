// SPDX-License-Identifier: BSD-3-Clause
// make_local_key() on this machine's real topology.
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "core/environment.hpp"
#include "core/error.hpp"
#include "rfa/rfa_config.h"
#include "scoped_env.hpp"
#include "topology/hwloc_probe.hpp"
#include "topology/local_key.hpp"
#include "topology/ring_order.hpp"

#if RFA_HAVE_HWLOC
#include <hwloc.h>
#endif

namespace rfa::topology {
namespace {

using rfa::test::ScopedEnv;

std::string real_host_name() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  return name;
}

TEST(LocalKey, CarriesHostNameAndHash) {
  ScopedEnv no_override(env_name(Env::test_hostname), nullptr);
  const RankKey key = make_local_key();
  EXPECT_EQ(std::string(key.host), real_host_name().substr(0, RankKey::kHostCapacity - 1));
  EXPECT_EQ(key.host_hash, host_hash(real_host_name()));
  EXPECT_EQ(key.rank, -1);
}

TEST(LocalKey, TestHostnameOverrideReplacesTheHost) {
  ScopedEnv fake(env_name(Env::test_hostname), "pretend-node7");
  const RankKey key = make_local_key({"", false});
  EXPECT_STREQ(key.host, "pretend-node7");
  EXPECT_EQ(key.host_hash, host_hash("pretend-node7"));
}

TEST(LocalKey, SlurmTopologyAddressIsRecorded) {
  ScopedEnv addr(env_name(Env::slurm_topology_addr), "s0.s3.node12");
  EXPECT_STREQ(make_local_key({"", false}).slurm_topology_addr, "s0.s3.node12");
  ScopedEnv unset(env_name(Env::slurm_topology_addr), nullptr);
  EXPECT_STREQ(make_local_key({"", false}).slurm_topology_addr, "");
}

TEST(LocalKey, GpuBusIdIsNormalizedOrRejected) {
  EXPECT_STREQ(make_local_key({"0000:3B:00.0", false}).pci_bus_id, "0000:3b:00.0");
  EXPECT_THROW(make_local_key({"not-a-bus-id", false}), rfa::Error);
}

TEST(LocalKey, WithoutHwlocOnlyHostAndPciAreKnown) {
  const RankKey key = make_local_key({"0000:01:00.0", false});
  EXPECT_EQ(key.flags & kKeyFromHwloc, 0u);
  EXPECT_EQ(key.numa_node, -1);
  EXPECT_EQ(key.package, -1);
  EXPECT_STREQ(key.nic, "");
}

TEST(LocalKey, RealTopologyGivesAValidOrder) {
  const RankKey key = make_local_key();
#if RFA_HAVE_HWLOC
  EXPECT_NE(key.flags & kKeyFromHwloc, 0u) << "hwloc is built in but the topology did not load";
#endif
  // A GPU that is not in this machine is simply not found.
  const RankKey absent_gpu = make_local_key({"00fe:fe:1f.7", true});
  EXPECT_EQ(absent_gpu.flags & kKeyGpuFound, 0u);
  EXPECT_STREQ(absent_gpu.pci_bus_id, "00fe:fe:1f.7");

  // Four ranks on this node with the real key: a valid order, no inter-node edge.
  std::vector<RankKey> keys(4, key);
  for (int r = 0; r < 4; ++r) keys[r].rank = r;
  const auto order = compute_ring_order(keys);
  EXPECT_TRUE(is_single_cycle(order));
  EXPECT_EQ(order, identity_order(4));  // identical keys: rank breaks the tie
  EXPECT_EQ(count_edges(keys, order).inter_node, 0);
}

TEST(Environment, VariablesWithAPrefixAreListedSorted) {
  ScopedEnv b{"RFA_TEST_PREFIXED_B", "2"};
  ScopedEnv a{"RFA_TEST_PREFIXED_A", "x=1"};
  ScopedEnv other{"RFA_TEST_PREFIXEX", "no"};
  EXPECT_EQ(env_with_prefix("RFA_TEST_PREFIXED_"), "RFA_TEST_PREFIXED_A=x=1\nRFA_TEST_PREFIXED_B=2\n");
  EXPECT_EQ(env_with_prefix("RFA_TEST_NO_SUCH_PREFIX_"), "");
}

#if RFA_HAVE_HWLOC
// Binds the process to the CPUs of the given OS indices for the test's duration (the binding
// set on the real machine, before the test sets hwloc's variables), then restores the old one.
class BoundToCpus {
 public:
  explicit BoundToCpus(std::initializer_list<unsigned> os_indices) {
    hwloc_topology_init(&topology_);
    hwloc_topology_load(topology_);
    old_ = hwloc_bitmap_alloc();
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    for (unsigned i : os_indices) hwloc_bitmap_set(set, i);
    // Where the old binding cannot be read it could not be restored: nothing is changed.
    bound_ = hwloc_get_cpubind(topology_, old_, HWLOC_CPUBIND_PROCESS) == 0 &&
             hwloc_bitmap_isincluded(set, hwloc_topology_get_allowed_cpuset(topology_)) &&
             hwloc_set_cpubind(topology_, set, HWLOC_CPUBIND_PROCESS) == 0;
    hwloc_bitmap_free(set);
  }
  ~BoundToCpus() {
    if (bound_) hwloc_set_cpubind(topology_, old_, HWLOC_CPUBIND_PROCESS);
    hwloc_bitmap_free(old_);
    hwloc_topology_destroy(topology_);
  }
  bool bound() const { return bound_; }

 private:
  hwloc_topology_t topology_ = nullptr;
  hwloc_bitmap_t old_ = nullptr;
  bool bound_ = false;
};

// This machine's last PU and, found by cpusets, the NUMA node and package a key of a process
// bound to it should name: of the NUMA nodes whose CPUs hold the PU (memory-only nodes share
// their DRAM node's), the one of ordinary memory, lowest OS index first.
struct LastPu {
  unsigned os_index = 0;
  int numa = -1;
  int package = -1;
};

LastPu last_pu() {
  LastPu last;
  hwloc_topology_t topology = nullptr;
  hwloc_topology_init(&topology);
  hwloc_topology_load(topology);
  hwloc_obj_t pu = hwloc_get_obj_by_type(topology, HWLOC_OBJ_PU, hwloc_get_nbobjs_by_type(topology, HWLOC_OBJ_PU) - 1);
  if (pu) {
    last.os_index = pu->os_index;
    bool plain_found = false;
    hwloc_obj_t numa = nullptr;
    while ((numa = hwloc_get_next_obj_by_type(topology, HWLOC_OBJ_NUMANODE, numa))) {
      if (!hwloc_bitmap_isincluded(pu->cpuset, numa->cpuset)) continue;
      const bool plain = numa->subtype == nullptr || std::string(numa->subtype) == "DRAM";
      const int index = static_cast<int>(numa->os_index);
      if (last.numa < 0 || (plain && !plain_found) || (plain == plain_found && index < last.numa)) {
        last.numa = index;
        plain_found = plain;
      }
    }
    hwloc_obj_t package = hwloc_get_ancestor_obj_by_type(topology, HWLOC_OBJ_PACKAGE, pu);
    last.package = package ? static_cast<int>(package->os_index) : -1;
  }
  hwloc_topology_destroy(topology);
  return last;
}

TEST(LocalKey, PinnedProcessKnowsItsNumaNodeAndPackage) {
  const LastPu last = last_pu();
  BoundToCpus pinned({last.os_index});
  if (!pinned.bound()) GTEST_SKIP() << "this system does not allow changing the CPU binding";
  const RankKey key = make_local_key();
  // Every PU has a NUMA node of ordinary memory; a package exists unless the OS hides it.
  EXPECT_GE(key.numa_node, 0);
  EXPECT_EQ(key.numa_node, last.numa);
  EXPECT_EQ(key.package, last.package);
}

// The key of a process bound to `cpus` on a made-up node with this machine's CPU numbering
// (HWLOC_THISSYSTEM: hwloc reads the real binding against it); `variable` is HWLOC_SYNTHETIC
// (a description) or HWLOC_XMLFILE (a file). False where the process may not run on them all
// (a cpuset, a Slurm step, CPUs numbered with gaps).
bool key_bound_to(std::initializer_list<unsigned> cpus, const char* variable, const std::string& node, RankKey& key) {
  BoundToCpus bound(cpus);
  if (!bound.bound()) return false;
  ScopedEnv made_up{variable, node.c_str()}, this_system{"HWLOC_THISSYSTEM", "1"};
  key = make_local_key();
  return true;
}

// Memory-only NUMA nodes (HBM beside DRAM, CXL memory, a GH200's GPU memory) share their CPUs
// with the DRAM node: a rank bound to one core still has one NUMA node, its socket's, and two
// sockets' ranks have different ones.
TEST(LocalKey, MemoryOnlyNumaNodesLeaveEachSocketItsOwnNode) {
  const char* cannot = "cannot bind to CPUs 0 and 1 here";
  RankKey first, second, both;
  for (const char* node : {"pack:2 [numa] [numa] core:1 pu:1",     // two nodes on each socket
                           "[numa] pack:2 [numa] core:1 pu:1"}) {  // one each, one of the machine
    SCOPED_TRACE(node);
    if (!key_bound_to({0}, "HWLOC_SYNTHETIC", node, first) || !key_bound_to({1}, "HWLOC_SYNTHETIC", node, second))
      GTEST_SKIP() << cannot;
    EXPECT_EQ(first.package, 0);
    EXPECT_EQ(second.package, 1);
    EXPECT_GE(first.numa_node, 0);
    EXPECT_GE(second.numa_node, 0);
    EXPECT_NE(first.numa_node, second.numa_node);
    // Bound to both sockets: neither socket's node, nor the whole machine's.
    ASSERT_TRUE(key_bound_to({0, 1}, "HWLOC_SYNTHETIC", node, both));
    EXPECT_EQ(both.package, -1);
    EXPECT_EQ(both.numa_node, -1);
  }
  // Two sub-NUMA clusters of one socket, each with its HBM node: told apart.
  const char* clusters = "pack:1 group:2 [numa] [numa] core:1 pu:1";
  ASSERT_TRUE(key_bound_to({0}, "HWLOC_SYNTHETIC", clusters, first));
  ASSERT_TRUE(key_bound_to({1}, "HWLOC_SYNTHETIC", clusters, second));
  EXPECT_GE(first.numa_node, 0);
  EXPECT_GE(second.numa_node, 0);
  EXPECT_NE(first.numa_node, second.numa_node);
}

// Of a core's NUMA nodes, the one of ordinary memory (subtype DRAM, as hwloc names it beside
// other kinds) is its node, though an HBM node has the lower OS index.
TEST(LocalKey, PlainMemoryNodeWinsOverHbm) {
  const std::string xml = RFA_TOPOLOGY_TEST_DATA "/hbm_before_dram.xml";
  RankKey key;
  for (unsigned cpu : {0u, 1u}) {
    if (!key_bound_to({cpu}, "HWLOC_XMLFILE", xml, key)) GTEST_SKIP() << "cannot bind to CPU " << cpu << " here";
    EXPECT_EQ(key.numa_node, 1) << "CPU " << cpu;
  }
}

// A made-up node loaded from XML (HWLOC_XMLFILE makes hwloc read it instead of this machine).
// hwloc cannot read a binding on a topology that is not this system, so the process counts as
// unbound: NUMA node and package come from the GPU, the NIC is the one nearest the GPU.
class SyntheticNode : public ::testing::Test {
 protected:
  ScopedEnv xml_{"HWLOC_XMLFILE", RFA_TOPOLOGY_TEST_DATA "/two_sockets_two_gpus.xml"};
};

TEST_F(SyntheticNode, GpuOnSecondSocketGivesItsLocalityAndNic) {
  const RankKey key = make_local_key({"0000:B1:00.0", true});
  ASSERT_NE(key.flags & kKeyFromHwloc, 0u);
  EXPECT_NE(key.flags & kKeyGpuFound, 0u);
  EXPECT_NE(key.flags & kKeyLocalityFromGpu, 0u);
  EXPECT_EQ(key.package, 1);
  EXPECT_EQ(key.numa_node, 1);
  EXPECT_STREQ(key.nic, "mlx5_1");
}

TEST_F(SyntheticNode, OpenFabricsDeviceWinsOverItsNetworkTwin) {
  const RankKey key = make_local_key({"0000:1a:00.0", true});
  EXPECT_EQ(key.package, 0);
  EXPECT_EQ(key.numa_node, 0);
  EXPECT_STREQ(key.nic, "mlx5_0");  // ib0 hangs off the same card, equally near
}

TEST_F(SyntheticNode, WithoutAGpuAnUnboundRankHasNoSocket) {
  const RankKey key = make_local_key();
  EXPECT_EQ(key.flags & (kKeyGpuFound | kKeyLocalityFromGpu), 0u);
  EXPECT_EQ(key.package, -1);
  EXPECT_EQ(key.numa_node, -1);
  EXPECT_STREQ(key.nic, "mlx5_0");  // both cards equally near the machine: name order
}

// Every context creation makes a key: the machine's topology is loaded once per process, and
// again only for another setting of hwloc's own variables.
TEST(LocalKey, TheTopologyIsLoadedOncePerSettingOfHwlocsVariables) {
  make_local_key();  // this machine's topology, loaded here or by a test before
  const int loaded = hwloc_topologies_loaded();
  ASSERT_GE(loaded, 1);
  make_local_key();
  make_local_key({"0000:1a:00.0", true});
  EXPECT_EQ(hwloc_topologies_loaded(), loaded);
  {
    ScopedEnv xml{"HWLOC_XMLFILE", RFA_TOPOLOGY_TEST_DATA "/two_sockets_two_gpus.xml"};
    EXPECT_STREQ(make_local_key().nic, "mlx5_0");  // the made-up node, not this machine kept
    EXPECT_STREQ(make_local_key({"0000:B1:00.0", true}).nic, "mlx5_1");
    EXPECT_LE(hwloc_topologies_loaded(), loaded + 1);  // loaded here, or kept from a test before
  }
  const int with_xml = hwloc_topologies_loaded();
  EXPECT_STRNE(make_local_key().nic, "mlx5_0");  // this machine again (it has no such card)
  EXPECT_EQ(hwloc_topologies_loaded(), with_xml);
}

TEST_F(SyntheticNode, RanksOrderByTheirGpusSocket) {
  // Rank 0 drives the GPU on socket 1, rank 1 the one on socket 0: rank 1 goes first.
  std::vector<RankKey> keys = {make_local_key({"0000:b1:00.0", true}), make_local_key({"0000:1a:00.0", true})};
  keys[0].rank = 0;
  keys[1].rank = 1;
  EXPECT_EQ(compute_ring_order(keys), (std::vector<int>{1, 0}));
}
#endif

}  // namespace
}  // namespace rfa::topology
