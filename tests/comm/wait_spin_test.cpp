// SPDX-License-Identifier: BSD-3-Clause
// How long the MPI communicator's waits poll without pause before they nap
// (collective/wait_spin.hpp), under mpiexec -n 1..3: decided from the node's ranks and CPUs,
// RFA_WAIT_SPIN_MS read and checked on every rank together, options that give it kept, and
// the ring exchange's and a collective's wait spinning or napping as told (told by how often a
// rank waiting for a late neighbour slept, not by any time).
#include <dirent.h>
#include <gtest/gtest.h>
#include <mpi.h>
#include <sched.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "collective/node_cpus.hpp"
#include "collective/wait_spin.hpp"
#include "comm/mpi/mpi_communicator.hpp"
#include "comm_test_support.hpp"

namespace rfa::comm {
namespace {

using testing::world_rank;
using testing::world_size;

/// Unsets RFA_WAIT_SPIN_MS when it goes out of scope, whatever the test did.
struct SpinVariableCleared {
  SpinVariableCleared() { unsetenv("RFA_WAIT_SPIN_MS"); }
  ~SpinVariableCleared() { unsetenv("RFA_WAIT_SPIN_MS"); }
};

/// Every thread of every rank on one CPU, the lowest any rank may run on, while it lives (the
/// launcher may have bound the ranks to CPUs of their own), then back on the CPUs each thread
/// had (node_cpus reads the union of every thread's). Collective over MPI_COMM_WORLD.
class AllThreadsOnOneCpu {
 public:
  AllThreadsOnOneCpu() {
    cpu_set_t mine;
    CPU_ZERO(&mine);
    sched_getaffinity(0, sizeof(mine), &mine);
    int first = 0;
    while (first < CPU_SETSIZE && !CPU_ISSET(first, &mine)) ++first;
    MPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    if (DIR* tasks = opendir("/proc/self/task")) {
      while (const dirent* entry = readdir(tasks)) {
        const pid_t tid = pid_t(std::atoi(entry->d_name));
        cpu_set_t had;
        if (tid > 0 && sched_getaffinity(tid, sizeof(had), &had) == 0 && sched_setaffinity(tid, sizeof(one), &one) == 0)
          kept_.push_back({tid, had});
      }
      closedir(tasks);
    }
  }
  ~AllThreadsOnOneCpu() {
    for (const auto& [tid, had] : kept_) sched_setaffinity(tid, sizeof(had), &had);
  }

 private:
  std::vector<std::pair<pid_t, cpu_set_t>> kept_;
};

/// The calling thread's voluntary context switches so far (each sleep is one).
long voluntary_switches() {
  rusage r{};
  getrusage(RUSAGE_THREAD, &r);
  return r.ru_nvcsw;
}

TEST(WaitSpin, DecidedFromTheNodesRanksAndCpus) {
  const SpinVariableCleared cleared;
  const collective::NodeShare node = collective::node_share(MPI_COMM_WORLD, "the test's node");
  EXPECT_EQ(node.ranks, world_size()) << "the suites run on one node";
  EXPECT_EQ(node.cpus, collective::node_cpus(MPI_COMM_WORLD, "the test's node CPUs"));
  MpiCommunicator comm(MPI_COMM_WORLD, world_rank());
  EXPECT_EQ(comm.wait_spin().count(),
            node.ranks > node.cpus ? collective::kSharedCoresWaitSpinMs : collective::kDefaultWaitSpinMs)
      << node.ranks << " ranks on " << node.cpus << " CPUs";
  // A communicator split from it keeps its decision.
  auto half = comm.split(world_rank() % 2, world_rank() / 2);
  EXPECT_EQ(static_cast<MpiCommunicator&>(*half).wait_spin(), comm.wait_spin());
}

// Every rank's threads on one CPU: two or more ranks share it and wait with the short spin,
// one rank has it to itself.
TEST(WaitSpin, RanksThatShareACpuSpinBriefly) {
  const SpinVariableCleared cleared;
  const AllThreadsOnOneCpu bound;
  const collective::NodeShare node = collective::node_share(MPI_COMM_WORLD, "the test's node");
  MpiCommunicator comm(MPI_COMM_WORLD, world_rank());
  ASSERT_EQ(node.cpus, 1);
  EXPECT_EQ(comm.wait_spin().count(),
            world_size() > 1 ? collective::kSharedCoresWaitSpinMs : collective::kDefaultWaitSpinMs);
}

TEST(WaitSpin, TheEnvironmentOverridesAndIsCheckedOnEveryRank) {
  const SpinVariableCleared cleared;
  for (const char* ms : {"7", "0", "60000"}) {
    setenv("RFA_WAIT_SPIN_MS", ms, 1);
    MpiCommunicator comm(MPI_COMM_WORLD, world_rank());
    EXPECT_EQ(comm.wait_spin().count(), std::atoi(ms));
  }
  // A bad value on the last rank only: every rank fails, naming the variable.
  for (const char* bad : {"soon", "-1", "2.5", "60001", "5ms", "5 ", " 5", "+5", "99999999999999999999"}) {
    setenv("RFA_WAIT_SPIN_MS", world_rank() == world_size() - 1 ? bad : "3", 1);
    try {
      MpiCommunicator comm(MPI_COMM_WORLD, world_rank());
      ADD_FAILURE() << "RFA_WAIT_SPIN_MS='" << bad << "' on the last rank was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), RFA_ERROR_INVALID_ARGUMENT) << bad;
      EXPECT_NE(std::string(e.what()).find("RFA_WAIT_SPIN_MS is '" + std::string(bad) + "'"), std::string::npos)
          << e.what();
    }
  }
}

TEST(WaitSpin, OptionsThatGiveItAreKept) {
  const SpinVariableCleared cleared;
  setenv("RFA_WAIT_SPIN_MS", "soon", 1);  // not read where the options decide
  MpiOptions options;
  options.wait_spin_ms = 3;
  MpiCommunicator comm(MPI_COMM_WORLD, world_rank(), options);
  EXPECT_EQ(comm.wait_spin().count(), 3);
}

// The rank after rank 1 waits for rank 1's block, which comes 0.6 s late; how often its thread
// slept meanwhile (voluntary context switches) tells a spin, which polls and yields (never
// asleep, however little of a core it gets beside other work), from naps of 0.2 ms (about
// 2000 here). A wait that ignored the spin it was told and polled for the default 50 ms would
// nap most of the time told to spin.
TEST(WaitSpin, ARankWaitingForALateNeighbourSpinsOrNapsAsTold) {
  if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
  const SpinVariableCleared cleared;
  constexpr double kLate = 0.6;
  for (const int spin_ms : {60000, 0}) {
    MpiOptions options;
    options.wait_spin_ms = spin_ms;
    options.timeout_s = 30;
    MpiCommunicator comm(MPI_COMM_WORLD, world_rank(), options);
    std::vector<char> send(4096, char(world_rank())), recv(4096);
    std::vector<char> gathered(send.size() * std::size_t(world_size()));
    for (const bool collective : {false, true}) {
      comm.begin_call({9, 1, collective ? 2 : 1, nullptr});
      if (world_rank() == 1) std::this_thread::sleep_for(std::chrono::duration<double>(kLate));
      const long switches = voluntary_switches();
      const auto start = std::chrono::steady_clock::now();
      Exchange exchange = collective ? comm.start_allgather(send.data(), gathered.data(), send.size())
                                     : comm.start_ring_exchange(send.data(), recv.data(), send.size());
      exchange.wait();
      const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const long slept = voluntary_switches() - switches;
      if (world_rank() == 2 % world_size() && waited > 0.5 * kLate) {
        const char* what = collective ? "an all-gather" : "a ring exchange";
        if (spin_ms > 0) {
          EXPECT_LT(slept, 20) << what << " told to spin waited " << waited << " s and slept " << slept << " times";
        } else {
          EXPECT_GT(slept, 100) << what << " told to nap waited " << waited << " s and slept " << slept << " times";
        }
      } else if (world_rank() == 2 % world_size()) {
        ADD_FAILURE() << "the rank after rank 1 waited only " << waited << " s for it";
      }
      if (!collective) {
        EXPECT_EQ(recv[0], char(comm.prev()));
      }
      rfa::test::barrier_idle(MPI_COMM_WORLD);
    }
  }
}

}  // namespace
}  // namespace rfa::comm
