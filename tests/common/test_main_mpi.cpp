// SPDX-License-Identifier: BSD-3-Clause
// GoogleTest main for suites run under mpiexec. Every rank runs every test; only rank 0
// prints, and the exit code is agreed across ranks so a failure on any rank fails the test.
#include <gtest/gtest.h>
#include <mpi.h>

#include <Kokkos_Core.hpp>

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
  int local = RUN_ALL_TESTS();
  int global = 0;
  MPI_Request request = MPI_REQUEST_NULL;  // a test may end with one rank seconds behind
  MPI_Iallreduce(&local, &global, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &request);
  rfa::test::wait_idle(&request);
  Kokkos::finalize();
  MPI_Finalize();
  return global;
}
