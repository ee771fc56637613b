// SPDX-License-Identifier: BSD-3-Clause
// choose_ring_order() under mpiexec: every rank agrees on the order, on the policy and on
// every error; none hangs (a hang shows as this test's timeout).
#include <gtest/gtest.h>
#include <mpi.h>
#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "collective/node_cpus.hpp"
#include "collective/node_rank.hpp"
#include "core/environment.hpp"
#include "core/error.hpp"
#include "scoped_env.hpp"
#include "topology/choose_ring_order.hpp"
#include "topology/gather_keys.hpp"
#include "topology/local_key.hpp"
#include "topology/order_policy.hpp"

namespace rfa::topology {
namespace {

using rfa::test::ScopedEnv;

int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

int world_size() {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

// True on every rank when every rank passed the same vector.
bool same_on_every_rank(const std::vector<int>& values) {
  std::vector<int> root = values;
  int count = static_cast<int>(root.size());
  MPI_Bcast(&count, 1, MPI_INT, 0, MPI_COMM_WORLD);
  root.resize(count);
  MPI_Bcast(root.data(), count, MPI_INT, 0, MPI_COMM_WORLD);
  int same = root == values ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &same, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return same == 1;
}

std::vector<int> text_bytes(const std::string& text) { return std::vector<int>(text.begin(), text.end()); }

// A file name every rank agrees on (rank 0 picks it), removed when the test ends.
class SharedTempFile {
 public:
  explicit SharedTempFile(const std::string& tag) {
    std::string name = ::testing::TempDir() + "rfa_topology_" + tag + "_" + std::to_string(getpid()) + ".txt";
    int length = static_cast<int>(name.size());
    MPI_Bcast(&length, 1, MPI_INT, 0, MPI_COMM_WORLD);
    name.resize(length);
    MPI_Bcast(&name[0], length, MPI_CHAR, 0, MPI_COMM_WORLD);
    path_ = name;
  }
  ~SharedTempFile() {
    MPI_Barrier(MPI_COMM_WORLD);
    if (world_rank() == 0) std::remove(path_.c_str());
  }
  // Rank 0 writes; every rank returns after the file exists.
  void write(const std::string& text) const {
    if (world_rank() == 0) std::ofstream(path_) << text;
    MPI_Barrier(MPI_COMM_WORLD);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Expects call() to throw rfa::Error with this code on every rank, with the same message.
void expect_error_on_every_rank(rfa_result_t expected, const std::function<void()>& call,
                                const std::string& expected_text = "") {
  int code = RFA_SUCCESS;
  std::string message;
  try {
    call();
  } catch (const rfa::Error& e) {
    code = e.code();
    message = e.what();
  }
  EXPECT_EQ(code, expected) << message;
  EXPECT_NE(message.find(expected_text), std::string::npos) << message;
  EXPECT_TRUE(same_on_every_rank({code})) << "ranks disagree on the error code";
  EXPECT_TRUE(same_on_every_rank(text_bytes(message))) << "ranks disagree on the message: " << message;
}

std::vector<int> reversed_order(int size) {
  std::vector<int> order;
  for (int r = size - 1; r >= 0; --r) order.push_back(r);
  return order;
}

std::string as_lines(const std::vector<int>& order) {
  std::ostringstream os;
  for (int rank : order) os << rank << '\n';
  return os.str();
}

TEST(ChooseRingOrder, EveryRankComputesTheSameTopologyOrder) {
  ScopedEnv no_fake(env_name(Env::test_hostname), nullptr);
  const RingOrder ring = choose_ring_order(MPI_COMM_WORLD, RFA_RING_ORDER_TOPOLOGY);
  ASSERT_EQ(static_cast<int>(ring.order.size()), world_size());
  EXPECT_TRUE(is_single_cycle(ring.order));
  EXPECT_EQ(ring.policy_used, RFA_RING_ORDER_TOPOLOGY);
  EXPECT_EQ(ring.order[ring.position], world_rank());
  EXPECT_TRUE(same_on_every_rank(ring.order));

  // Applying it the way src/comm/ will: the new communicator's rank is the position.
  MPI_Comm ring_comm;
  MPI_Comm_split(MPI_COMM_WORLD, 0, ring.position, &ring_comm);
  int ring_rank = -1;
  MPI_Comm_rank(ring_comm, &ring_rank);
  EXPECT_EQ(ring_rank, ring.position);
  MPI_Comm_free(&ring_comm);
}

TEST(ChooseRingOrder, RanksPretendingToLiveOnTwoHosts) {
  // TEST-ONLY host override: even ranks on "fakenode10", odd ranks on "fakenode2".
  // Natural order puts fakenode2 (the odd ranks) first.
  const int rank = world_rank(), size = world_size();
  ScopedEnv fake(env_name(Env::test_hostname), rank % 2 ? "fakenode2" : "fakenode10");
  const RingOrder ring = choose_ring_order(MPI_COMM_WORLD, RFA_RING_ORDER_TOPOLOGY);

  std::vector<int> expected;
  for (int r = 1; r < size; r += 2) expected.push_back(r);
  for (int r = 0; r < size; r += 2) expected.push_back(r);
  // Ranks on one real machine share package and NUMA node unless mpiexec bound them to
  // different ones; the within-host order is then by rank, which is what `expected` assumes.
  for (const RankKey& key : ring.keys) {
    ASSERT_EQ(key.package, ring.keys[0].package) << "ranks on different sockets; expected order assumes one";
    ASSERT_EQ(key.numa_node, ring.keys[0].numa_node) << "ranks on different NUMA nodes";
  }
  EXPECT_EQ(ring.order, expected);
  int expected_position = rank % 2 ? rank / 2 : size / 2 + rank / 2;
  EXPECT_EQ(ring.position, expected_position);
  EXPECT_EQ(count_edges(ring.keys, ring.order).inter_node, size > 1 ? 2 : 0);
  EXPECT_EQ(count_edges(ring.keys, identity_order(size)).inter_node, size > 1 ? size : 0);
}

TEST(ChooseRingOrder, IdentityPolicyAndEnvironment) {
  ScopedEnv identity(env_name(Env::ring_order), "identity");
  RingOrder ring = choose_ring_order(MPI_COMM_WORLD, RFA_RING_ORDER_DEFAULT);
  EXPECT_EQ(ring.policy_used, RFA_RING_ORDER_IDENTITY);
  EXPECT_EQ(ring.order, identity_order(world_size()));
  EXPECT_EQ(ring.position, world_rank());
  // An explicit policy wins over the variable.
  ring = choose_ring_order(MPI_COMM_WORLD, RFA_RING_ORDER_TOPOLOGY);
  EXPECT_EQ(ring.policy_used, RFA_RING_ORDER_TOPOLOGY);
}

TEST(ChooseRingOrder, FileFromEnvironmentAndFromOptions) {
  const int size = world_size();
  SharedTempFile file("good");
  file.write("# reversed ring\n" + as_lines(reversed_order(size)));
  {
    ScopedEnv from_env(env_name(Env::ring_order), "file:" + file.path());
    const RingOrder ring = choose_ring_order(MPI_COMM_WORLD, RFA_RING_ORDER_DEFAULT);
    EXPECT_EQ(ring.policy_used, RFA_RING_ORDER_FILE);
    EXPECT_EQ(ring.order, reversed_order(size));
    EXPECT_EQ(ring.position, size - 1 - world_rank());
    EXPECT_EQ(ring.order_file, file.path());
  }
  ScopedEnv unset(env_name(Env::ring_order), nullptr);
  RingOrderOptions options;
  options.policy = RFA_RING_ORDER_FILE;
  options.order_file = file.path();
  EXPECT_EQ(choose_ring_order(MPI_COMM_WORLD, options).order, reversed_order(size));
}

TEST(ChooseRingOrder, BadFilesFailOnEveryRank) {
  const int size = world_size();
  std::vector<int> duplicated = reversed_order(size);
  duplicated.back() = duplicated.front();  // for size 1: {0} -> {0}, handled below
  const std::vector<std::pair<std::string, std::string>> bad_files = {
      {as_lines(duplicated) + (size == 1 ? "0\n" : ""), "already listed"},
      {as_lines(identity_order(size - 1)), "each rank exactly once"},
      {as_lines(identity_order(size)) + std::to_string(size) + "\n", "is outside"},
      {"zero\n", "is not a rank"},
  };
  SharedTempFile file("bad");
  for (const auto& [text, complaint] : bad_files) {
    file.write(text);
    ScopedEnv env(env_name(Env::ring_order), "file:" + file.path());
    expect_error_on_every_rank(
        RFA_ERROR_INVALID_ARGUMENT, [] { choose_ring_order(MPI_COMM_WORLD, RFA_RING_ORDER_DEFAULT); }, complaint);
  }
  ScopedEnv missing(env_name(Env::ring_order), "file:/nonexistent/rfa-ring.txt");
  expect_error_on_every_rank(
      RFA_ERROR_INVALID_ARGUMENT, [] { choose_ring_order(MPI_COMM_WORLD, RFA_RING_ORDER_DEFAULT); },
      "/nonexistent/rfa-ring.txt");
}

TEST(ChooseRingOrder, BadEnvironmentValuesFailOnEveryRank) {
  for (const char* bad : {"bogus", "file:", "TOPO"}) {
    ScopedEnv env(env_name(Env::ring_order), bad);
    expect_error_on_every_rank(
        RFA_ERROR_INVALID_ARGUMENT, [] { choose_ring_order(MPI_COMM_WORLD, RFA_RING_ORDER_DEFAULT); },
        "RFA_RING_ORDER");
  }
  ScopedEnv unset(env_name(Env::ring_order), nullptr);
  expect_error_on_every_rank(
      RFA_ERROR_INVALID_ARGUMENT, [] { choose_ring_order(MPI_COMM_WORLD, RFA_RING_ORDER_FILE); }, "needs a path");
}

TEST(ChooseRingOrder, EnvironmentThatDiffersBetweenRanksFailsOnEveryRank) {
  if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
  ScopedEnv env(env_name(Env::ring_order), world_rank() == 1 ? "identity" : "topo");
  expect_error_on_every_rank(
      RFA_ERROR_INVALID_USAGE, [] { choose_ring_order(MPI_COMM_WORLD, RFA_RING_ORDER_DEFAULT); },
      "differs between ranks");
}

TEST(ChooseRingOrder, DifferentPoliciesOnDifferentRanksFailOnEveryRank) {
  if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
  const rfa_ring_order_t policy = world_rank() == 0 ? RFA_RING_ORDER_IDENTITY : RFA_RING_ORDER_DEFAULT;
  expect_error_on_every_rank(
      RFA_ERROR_INVALID_USAGE, [policy] { choose_ring_order(MPI_COMM_WORLD, policy); },
      "different ring order policies");
}

// Rank 0 leaves the file out (it would then read RFA_RING_ORDER, a collective the others skip):
// every rank fails at once, naming the disagreement, before any collective differs. (A short
// deadline, so a mismatch costs seconds, not the default's minutes.)
TEST(ChooseRingOrder, AFileNamedOnSomeRanksOnlyFailsOnEveryRank) {
  if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
  SharedTempFile file("some");
  file.write(as_lines(identity_order(world_size())));
  ScopedEnv unset(env_name(Env::ring_order), nullptr);
  ScopedEnv deadline(env_name(Env::timeout_s), "5");
  RingOrderOptions options;
  options.policy = RFA_RING_ORDER_FILE;
  if (world_rank() != 0) options.order_file = file.path();
  expect_error_on_every_rank(
      RFA_ERROR_INVALID_USAGE, [&options] { choose_ring_order(MPI_COMM_WORLD, options); },
      "some ranks name a ring order file and others do not");
}

TEST(ChooseRingOrder, BadPciBusIdOnOneRankFailsOnEveryRank) {
  const bool last = world_rank() == world_size() - 1;
  expect_error_on_every_rank(
      RFA_ERROR_INVALID_ARGUMENT,
      [last] { choose_ring_order(MPI_COMM_WORLD, RFA_RING_ORDER_TOPOLOGY, last ? "gpu-zero" : ""); }, "gpu-zero");
}

TEST(ChooseRingOrder, DumpWritesKeysAndOrderFromRankZero) {
  SharedTempFile dump("dump");
  {
    ScopedEnv env(env_name(Env::topo_dump), dump.path());
    choose_ring_order(MPI_COMM_WORLD, RFA_RING_ORDER_IDENTITY);
  }
  if (world_rank() == 0) {
    std::ifstream in(dump.path());
    std::stringstream text;
    text << in.rdbuf();
    const std::string json = text.str();
    EXPECT_NE(json.find("\"policy\": \"identity\""), std::string::npos) << json;
    EXPECT_NE(json.find("\"size\": " + std::to_string(world_size())), std::string::npos) << json;
    EXPECT_NE(json.find("\"rank\": " + std::to_string(world_size() - 1)), std::string::npos) << json;
  }
  ScopedEnv unwritable(env_name(Env::topo_dump), "/nonexistent/dir/topo.json");
  expect_error_on_every_rank(
      RFA_ERROR_INVALID_ARGUMENT, [] { choose_ring_order(MPI_COMM_WORLD, RFA_RING_ORDER_IDENTITY); }, "topo.json");
}

TEST(ChooseRingOrder, LocalRankCountsRanksOfThisNode) {
  // mpiexec starts every rank on this machine: local rank = world rank.
  EXPECT_EQ(collective::node_local_rank(MPI_COMM_WORLD), world_rank());
}

TEST(ChooseRingOrder, NodeCpusAreTheUnionOfTheRanksAffinities) {
  // Every rank runs on this machine: the node's CPUs include this rank's own, are no more than
  // the machine has, and every rank counts the same.
  cpu_set_t mine;
  CPU_ZERO(&mine);
  ASSERT_EQ(sched_getaffinity(0, sizeof(mine), &mine), 0);
  const int cpus = collective::node_cpus(MPI_COMM_WORLD, "the test's node CPUs");
  EXPECT_GE(cpus, CPU_COUNT(&mine));
  EXPECT_LE(cpus, int(sysconf(_SC_NPROCESSORS_CONF)));
  int least = cpus, most = cpus;
  MPI_Allreduce(MPI_IN_PLACE, &least, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &most, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  EXPECT_EQ(least, most);
}

}  // namespace
}  // namespace rfa::topology
