// SPDX-License-Identifier: BSD-3-Clause
// A send MPI refuses inside a call (np 2): the Ulysses strategy's head exchange on rank 0 gets
// an error from MPI_Isend. Both ranks' calls fail (rank 1's by the deadline, waiting for rank
// 0's blocks), and the context is then unusable on both: the next call is refused at once on
// every rank, where rank 0, whose exchange gave up transfers, would otherwise have run into
// its own exchange again while rank 1 refused, and waited a deadline for it. This program
// defines MPI_Isend itself, in front of MPI's (librfa's calls resolve to it): armed, the next
// send fails.
#include <gtest/gtest.h>
#include <mpi.h>

#include <atomic>
#include <chrono>
#include <vector>

#include "capi_test_support.hpp"
#include "rfa/rfa_mpi.h"

namespace {
std::atomic<bool> refuse_next_send{false};
}

extern "C" int MPI_Isend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                         MPI_Request* request) {
  if (refuse_next_send.exchange(false)) return MPI_ERR_OTHER;
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

  if (world_rank() == 0) refuse_next_send = true;
  const rfa_result_t first = rfa_forward(ctx, q.data(), k.data(), v.data(), out.data(), lse.data());
  EXPECT_NE(first, RFA_SUCCESS);
  if (world_rank() == 0) {
    EXPECT_FALSE(refuse_next_send.load()) << "the forward made no send to refuse";
  }

  const auto begun = std::chrono::steady_clock::now();
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_USAGE, rfa_forward(ctx, q.data(), k.data(), v.data(), out.data(), lse.data()),
                   "the context is unusable since an earlier rfa_forward");
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - begun).count();
  EXPECT_LT(took, kDeadline / 2) << "a rank ran the next call into a deadline";
  ASSERT_RFA_OK(rfa_context_destroy(ctx));
  MPI_Barrier(MPI_COMM_WORLD);
}

}  // namespace
