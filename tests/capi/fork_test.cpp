// SPDX-License-Identifier: BSD-3-Clause
// A context in a fork of the process that created it (a child of fork(), under mpiexec -n 1-2):
// MPI and CUDA do not carry over fork, so in the child every call that communicates or touches
// the context's device is refused (RFA_ERROR_INVALID_USAGE, saying so) without reaching MPI,
// the queries answer, and rfa_context_destroy releases the child's handle alone. The parents'
// context keeps working, its results unchanged. (rfa_finalize there: capi_fork_finalize_test,
// where rfa owns Kokkos; this main initializes it.) (A forward in the child
// would take the parents' messages from Open MPI's shared-memory transport, and crash them.)
// A fork taken while another thread is inside rfa leaves the child none of rfa's mutexes held.
#include <gtest/gtest.h>
#include <mpi.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <string>
#include <thread>
#include <vector>

#include "capi_test_support.hpp"
#include "rfa/rfa_mpi.h"

namespace {

using namespace rfa_capi_test;

/// The child's checks: a bit set for each one that fails (its exit status; 0: all passed).
int child_checks(rfa_context_t ctx, std::vector<float>& q, std::vector<float>& out, std::vector<float>& lse) {
  int failed = 0;
  auto refused = [](rfa_result_t rc) {
    return rc == RFA_ERROR_INVALID_USAGE &&
           std::string(rfa_get_last_error_message()).find("is a fork of the one") != std::string::npos;
  };
  if (!refused(rfa_forward(ctx, q.data(), q.data(), q.data(), out.data(), lse.data()))) failed |= 1;
  if (!refused(rfa_backward(ctx, q.data(), q.data(), q.data(), out.data(), out.data(), lse.data(), q.data(), q.data(),
                            q.data())))
    failed |= 2;
  if (!refused(rfa_context_synchronize(ctx))) failed |= 4;
  int64_t released = 0;
  if (!refused(rfa_context_release_workspace(ctx, &released))) failed |= 8;
  int64_t L = 0;
  if (rfa_context_get_local_seq(ctx, &L) != RFA_SUCCESS || L <= 0) failed |= 16;
  if (rfa_context_destroy(ctx) != RFA_SUCCESS) failed |= 32;
  if (rfa_context_get_local_seq(ctx, &L) != RFA_ERROR_INVALID_ARGUMENT) failed |= 64;  // the handle is gone
  return failed;
}

TEST(Fork, TheChildsCopyTakesNoCollectiveCallAndTheParentsGoOn) {
  rfa_options_t o = small_problem(RFA_LAYOUT_ZIGZAG, 8);
  o.timeout_s = 30;
  rfa_context_t ctx = nullptr;
  ASSERT_RFA_OK(rfa_context_create(MPI_COMM_WORLD, &o, &ctx));
  int64_t L = 0;
  ASSERT_RFA_OK(rfa_context_get_local_seq(ctx, &L));
  const auto n = std::size_t(o.batch * L * o.heads * o.head_dim);
  std::vector<float> q(n, 0.25f), out(n), lse(std::size_t(o.batch * o.heads * L));
  ASSERT_RFA_OK(rfa_forward(ctx, q.data(), q.data(), q.data(), out.data(), lse.data()));
  const std::vector<float> before = out;

  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(child_checks(ctx, q, out, lse));  // no MPI, no test framework, no exit handlers
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "the child ended by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  EXPECT_EQ(WEXITSTATUS(status), 0) << "failed checks in the child (bits: 1 forward, 2 backward, 4 synchronize, "
                                       "8 release_workspace, 16 a query, 32 destroy, 64 the handle after destroy)";

  std::fill(out.begin(), out.end(), 0.0f);
  ASSERT_RFA_OK(rfa_forward(ctx, q.data(), q.data(), q.data(), out.data(), lse.data()));
  EXPECT_EQ(out, before) << "the parent's context changed across the fork";
  ASSERT_RFA_OK(rfa_context_destroy(ctx));
}

/// Waits up to `seconds` for `child` to end; kills it and returns false where it has not.
bool ended_in_time(pid_t child, double seconds, int& status) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    if (waitpid(child, &status, WNOHANG) == child) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  kill(child, SIGKILL);
  waitpid(child, &status, 0);
  return false;
}

// Another thread asks rfa about the context without pause (every query takes the registry's
// mutex) while this one forks: a child forked while that thread held the mutex would find it
// held forever, and its query and destroy would never return. Each child must end within 10 s.
TEST(Fork, AChildForkedWhileAnotherThreadIsInsideRfaIsNotBlocked) {
  rfa_options_t o = small_problem(RFA_LAYOUT_CONTIGUOUS, 8);
  o.timeout_s = 30;
  rfa_context_t ctx = nullptr;
  ASSERT_RFA_OK(rfa_context_create(MPI_COMM_WORLD, &o, &ctx));
  std::atomic<bool> stop{false};
  std::atomic<long> queries{0};
  std::thread asking([&] {
    int64_t L = 0;
    while (!stop.load(std::memory_order_relaxed)) {
      if (rfa_context_get_local_seq(ctx, &L) == RFA_SUCCESS) queries.fetch_add(1, std::memory_order_relaxed);
    }
  });
  while (queries.load() < 1000) std::this_thread::yield();  // the thread is asking
  constexpr int forks = 200;
  int blocked = 0, failed = 0;
  for (int i = 0; i < forks && blocked == 0; ++i) {
    const pid_t child = fork();
    if (child < 0) {  // not an ASSERT: the asking thread must be joined first
      ++failed;
      break;
    }
    if (child == 0) {
      int64_t L = 0;
      const bool ok = rfa_context_get_local_seq(ctx, &L) == RFA_SUCCESS && rfa_context_destroy(ctx) == RFA_SUCCESS;
      _exit(ok ? 0 : 1);
    }
    int status = 0;
    if (!ended_in_time(child, 10.0, status)) {
      ++blocked;
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      ++failed;
    }
  }
  stop = true;
  asking.join();
  EXPECT_EQ(blocked, 0) << "a child forked while another thread was inside rfa did not end in 10 s";
  EXPECT_EQ(failed, 0) << "children whose query or destroy failed, or forks that failed";
  ASSERT_RFA_OK(rfa_context_destroy(ctx));
}

}  // namespace
