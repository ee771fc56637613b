// SPDX-License-Identifier: BSD-3-Clause
// A send MPI refuses inside a call (np 2): rank 0's first send of the Ulysses strategy's head
// exchange gets an error from MPI_Isend, a second late. Rank 1, waiting for rank 0's blocks,
// times out; rank 0 fails with RFA_ERROR_MPI, its exchange having given up the receives it had
// posted. The context is then unusable on both ranks: the next call is refused at once on
// every rank, where rank 0 ran into its broken exchange again and waited a deadline for rank
// 1, which refused. This program defines MPI_Isend itself, in front of MPI's (librfa's calls
// resolve to it): armed, the send after `sends_before_refusal` more fails.
#include <gtest/gtest.h>
#include <mpi.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "capi_test_support.hpp"
#include "rfa/rfa_mpi.h"

namespace {
std::atomic<int> sends_before_refusal{-1};  // < 0: MPI_Isend is MPI's own
}

extern "C" int MPI_Isend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                         MPI_Request* request) {
  const int before = sends_before_refusal.load();
  if (before == 0) {
    sends_before_refusal = -1;
    std::this_thread::sleep_for(std::chrono::seconds(1));  // the peer waits a second longer than this rank
    return MPI_ERR_OTHER;
  }
  if (before > 0) sends_before_refusal = before - 1;
  return PMPI_Isend(buf, count, type, dest, tag, comm, request);
}

namespace {

using namespace rfa_capi_test;

TEST(RefusedSend, TheContextIsUnusableOnEveryRankAfterwards) {
  if (world_size() != 2) GTEST_SKIP() << "needs exactly 2 ranks";
  constexpr double kDeadline = 3.0;
  rfa_options_t o = small_problem(RFA_LAYOUT_CONTIGUOUS, 16);
  o.strategy = RFA_STRATEGY_ULYSSES;
  o.timeout_s = kDeadline;
  rfa_context_t ctx = nullptr;
  ASSERT_RFA_OK(rfa_context_create(MPI_COMM_WORLD, &o, &ctx));
  int64_t L = 0;
  ASSERT_RFA_OK(rfa_context_get_local_seq(ctx, &L));
  const auto qn = std::size_t(o.batch * L * o.heads * o.head_dim);
  const auto kvn = std::size_t(o.batch * L * o.kv_heads * o.head_dim);
  // Kept for the process: the first call leaves transfers to MPI that may still land here.
  static std::vector<float> q, k, v, out, lse;
  q = random_values<float>(qn, 3);
  k = random_values<float>(kvn, 4);
  v = random_values<float>(kvn, 5);
  out.assign(qn, 0.0f);
  lse.assign(std::size_t(o.batch * o.heads * L), 0.0f);

  if (world_rank() == 0) sends_before_refusal = 0;  // its first send fails
  // Rank 0 fails its head exchange a second after rank 1 began to wait in its own: rank 1 times
  // out there and meets rank 0 in the call's agreement before rank 0's deadline ends.
  if (world_rank() == 0) {
    EXPECT_RFA_FAILS(RFA_ERROR_MPI, rfa_forward(ctx, q.data(), k.data(), v.data(), out.data(), lse.data()),
                     "MPI_Isend (alltoallv)");
  } else {
    EXPECT_RFA_FAILS(RFA_ERROR_TIMEOUT, rfa_forward(ctx, q.data(), k.data(), v.data(), out.data(), lse.data()),
                     "alltoallv did not complete");
  }
  EXPECT_EQ(sends_before_refusal.load(), -1) << "the forward made no send to refuse";

  const auto begun = std::chrono::steady_clock::now();
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_USAGE, rfa_forward(ctx, q.data(), k.data(), v.data(), out.data(), lse.data()),
                   "the context is unusable since an earlier rfa_forward");
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - begun).count();
  EXPECT_LT(took, kDeadline / 2) << "a rank ran the next call into a deadline";

  ASSERT_RFA_OK(rfa_context_destroy(ctx));
  rfa::test::barrier_idle(MPI_COMM_WORLD);  // the ranks end together, waiting asleep
}

}  // namespace
