// SPDX-License-Identifier: BSD-3-Clause
// GoogleTest main for suites run under mpiexec. Every rank runs every test; only rank 0
// prints, and the exit code is agreed across ranks so a failure on any rank fails the test.
// A fatal failure (a failed ASSERT, an exception out of a test body) on one rank of several
// aborts them all: that rank has left the test early, so its next collective call meets the
// others' calls of the test it left, and they would wait for it until the communicator's
// deadline (600 s by default) or CTest's timeout.
#include <gtest/gtest.h>
#include <mpi.h>

#include <Kokkos_Core.hpp>
#include <cstdio>
#include <string>

#include "mpi_test_support.hpp"

namespace {
// Prints failures from every rank (prefixed) but the summary from rank 0 only.
class RankPrefixedFailures : public ::testing::EmptyTestEventListener {
 public:
  explicit RankPrefixedFailures(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (r.failed()) {
      std::fprintf(stderr, "[rank %d] %s:%d: %s\n", rank_, r.file_name() ? r.file_name() : "?", r.line_number(),
                   r.summary());
    }
  }

 private:
  int rank_;
};

// Ends the run of every rank at this rank's first fatal failure, after the listeners before
// it have printed the failure (it is appended last). The test's name is kept at its start:
// UnitTest::current_test_info() would wait for the lock GoogleTest holds while it reports.
class AbortOnFatalFailure : public ::testing::EmptyTestEventListener {
 public:
  explicit AbortOnFatalFailure(int rank) : rank_(rank) {}
  void OnTestStart(const ::testing::TestInfo& test) override {
    test_ = std::string(test.test_suite_name()) + "." + test.name();
  }
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (!r.fatally_failed()) return;
    std::fflush(stdout);
    std::fprintf(stderr,
                 "[rank %d] fatal failure in %s: this rank left the test early and the others "
                 "would wait for its calls; aborting every rank\n",
                 rank_, test_.c_str());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }

 private:
  int rank_;
  std::string test_ = "(no test)";
};
}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  Kokkos::initialize(argc, argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
  if (rank != 0) {
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new RankPrefixedFailures(rank));
  }
  if (rfa::test::world_size() > 1) listeners.Append(new AbortOnFatalFailure(rank));
  int local = RUN_ALL_TESTS();
  int global = 0;
  MPI_Request request = MPI_REQUEST_NULL;  // a test may end with one rank seconds behind
  MPI_Iallreduce(&local, &global, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &request);
  rfa::test::wait_idle(&request);
  Kokkos::finalize();
  MPI_Finalize();
  return global;
}
