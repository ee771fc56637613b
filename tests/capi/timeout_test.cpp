// SPDX-License-Identifier: BSD-3-Clause
// Deadlines on the MPI path: under mpiexec -n 2..4, the last rank enters a call
// late. Later than options.timeout_s: every rank returns RFA_ERROR_TIMEOUT (the punctual ones
// within the deadline plus a second), with a message naming the operation, and the context is
// unusable but destroys cleanly. Less late than the deadline: nothing changes.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "capi_test_support.hpp"
#include "rfa/rfa_mpi.h"

namespace {

using namespace rfa_capi_test;
using clock_type = std::chrono::steady_clock;

rfa_options_t small_options(double timeout_s) {
  rfa_options_t o = small_problem(RFA_LAYOUT_ZIGZAG, 16);
  o.timeout_s = timeout_s;
  return o;
}

struct Buffers {
  std::vector<float> q, k, v, out, lse;
  explicit Buffers(rfa_context_t ctx, const rfa_options_t& o) {
    int64_t L = 0;
    rfa_context_get_local_seq(ctx, &L);
    const auto qn = std::size_t(o.batch * L * o.heads * o.head_dim);
    const auto kvn = std::size_t(o.batch * L * o.kv_heads * o.head_dim);
    const auto values = random_values(qn, 5);
    q.assign(values.begin(), values.end());
    k.assign(values.begin(), values.begin() + std::ptrdiff_t(kvn));
    v.assign(values.rbegin(), values.rbegin() + std::ptrdiff_t(kvn));
    out.assign(qn, 0.0f);
    lse.assign(std::size_t(o.batch * o.heads * L), 0.0f);
  }
  rfa_result_t forward(rfa_context_t ctx) {
    return rfa_forward(ctx, q.data(), k.data(), v.data(), out.data(), lse.data());
  }
};

double seconds_since(clock_type::time_point start) {
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

TEST(Timeout, ALateRankMakesEveryRankFailWithinTheDeadline) {
  if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
  const double deadline = 1.0;
  const rfa_options_t o = small_options(deadline);
  rfa_context_t ctx = nullptr;
  ASSERT_RFA_OK(rfa_context_create(MPI_COMM_WORLD, &o, &ctx));
  Buffers b(ctx, o);
  const bool late = world_rank() == world_size() - 1;
  if (late) std::this_thread::sleep_for(std::chrono::duration<double>(2.5 * deadline));
  const auto start = clock_type::now();
  const rfa_result_t rc = b.forward(ctx);
  const double waited = seconds_since(start);
  const std::string message = rfa_get_last_error_message();
  EXPECT_EQ(int(rc), int(RFA_ERROR_TIMEOUT)) << message;
  EXPECT_NE(message.find("did not complete within 1 s"), std::string::npos) << message;
  if (!late) {
    EXPECT_LE(waited, deadline + 1.0) << message;
  }
  if (world_rank() == 0 || late) std::printf("  rank %d after %.2f s: %s\n", world_rank(), waited, message.c_str());
  // The context refuses further work, and is destroyed without waiting for anyone.
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_USAGE, b.forward(ctx), "timed out");
  ASSERT_RFA_OK(rfa_context_destroy(ctx));
}

// A deadline of 1e12 s is none (rfa.h: more than 1e9), not one whose nanoseconds overflow the
// clock into the past.
TEST(Timeout, ARankLessLateThanTheDeadlineChangesNothing) {
  for (const double deadline : {5.0, 1e12}) {
    SCOPED_TRACE(::testing::Message() << "timeout_s " << deadline);
    const rfa_options_t o = small_options(deadline);
    rfa::test::barrier_idle(MPI_COMM_WORLD);  // start together: an earlier test may have left a rank behind
    const bool late = world_rank() == world_size() - 1;
    if (late) std::this_thread::sleep_for(std::chrono::milliseconds(300));
    rfa_context_t ctx = nullptr;
    ASSERT_RFA_OK(rfa_context_create(MPI_COMM_WORLD, &o, &ctx));  // creation's agreement waits
    Buffers b(ctx, o);
    if (late) std::this_thread::sleep_for(std::chrono::milliseconds(300));
    ASSERT_RFA_OK(b.forward(ctx));  // the argument agreement and the ring exchanges wait
    ASSERT_RFA_OK(rfa_context_destroy(ctx));
  }
}

// options.timeout_s < 0 is no deadline at all, whatever RFA_TIMEOUT_S says: a rank later than
// the environment's deadline changes nothing.
TEST(Timeout, ANegativeTimeoutWaitsPastTheEnvironmentsDeadline) {
  if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
  setenv("RFA_TIMEOUT_S", "0.5", 1);
  const rfa_options_t o = small_options(-1.0);
  rfa::test::barrier_idle(MPI_COMM_WORLD);  // start together: an earlier test may have left a rank behind
  rfa_context_t ctx = nullptr;
  ASSERT_RFA_OK(rfa_context_create(MPI_COMM_WORLD, &o, &ctx));
  Buffers b(ctx, o);
  if (world_rank() == world_size() - 1) std::this_thread::sleep_for(std::chrono::milliseconds(1200));
  const rfa_result_t rc = b.forward(ctx);
  unsetenv("RFA_TIMEOUT_S");
  EXPECT_EQ(int(rc), int(RFA_SUCCESS)) << "a context without a deadline: " << rfa_get_last_error_message();
  ASSERT_RFA_OK(rfa_context_destroy(ctx));
}

// A rank that passes a context made over another communicator (here MPI_COMM_SELF, of size
// 1) never joins the others' agreement: rfa cannot tell this from a late rank, and the others
// end by the deadline, not in a hang. The stray rank's own call is a valid one-rank call.
TEST(Timeout, ARankUsingAContextOfAnotherCommunicatorEndsInTheDeadline) {
  if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
  const double deadline = 1.0;
  const rfa_options_t o = small_options(deadline);
  rfa_options_t alone = o;
  alone.seq_total = 2 * 8;  // the layout over one rank
  rfa::test::barrier_idle(MPI_COMM_WORLD);
  rfa_context_t ctx = nullptr, self_ctx = nullptr;
  ASSERT_RFA_OK(rfa_context_create(MPI_COMM_WORLD, &o, &ctx));
  ASSERT_RFA_OK(rfa_context_create(MPI_COMM_SELF, &alone, &self_ctx));
  const bool stray = world_rank() == world_size() - 1;
  if (stray) {
    Buffers mine(self_ctx, alone);
    ASSERT_RFA_OK(mine.forward(self_ctx));
    // Then it joins late, as the late rank above does, so that no collective stays open.
    std::this_thread::sleep_for(std::chrono::duration<double>(2.5 * deadline));
  }
  Buffers b(ctx, o);
  const auto start = clock_type::now();
  const rfa_result_t rc = b.forward(ctx);
  const double waited = seconds_since(start);
  const std::string message = rfa_get_last_error_message();
  EXPECT_EQ(int(rc), int(RFA_ERROR_TIMEOUT)) << message;
  if (!stray) {
    EXPECT_LE(waited, deadline + 1.0) << message;
  }
  ASSERT_RFA_OK(rfa_context_destroy(self_ctx));
  ASSERT_RFA_OK(rfa_context_destroy(ctx));
}

// A rank that arrives at rfa_context_create after the others gave up fails too, within the
// deadline of its own arrival, instead of waiting forever in one of creation's later
// collectives. The communicator is a duplicate: after a creation timeout the ranks' collectives
// on it are out of step for good (MPI cannot cancel a collective), so it is left alone after.
/// The last rank calls rfa_context_create(o) 2.5 deadlines after the others: every rank fails
/// with RFA_ERROR_TIMEOUT within the deadline plus a second of its arrival.
void expect_late_creation_to_time_out(const rfa_options_t& o, double deadline) {
  rfa::test::barrier_idle(MPI_COMM_WORLD);  // start together: the stray rank of the test before comes late
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  const bool late = world_rank() == world_size() - 1;
  if (late) std::this_thread::sleep_for(std::chrono::duration<double>(2.5 * deadline));
  rfa_context_t ctx = nullptr;
  const auto start = clock_type::now();
  const rfa_result_t rc = rfa_context_create(comm, &o, &ctx);
  const double waited = seconds_since(start);
  const std::string message = rfa_get_last_error_message();
  EXPECT_EQ(int(rc), int(RFA_ERROR_TIMEOUT)) << message;
  EXPECT_EQ(ctx, nullptr);
  EXPECT_LE(waited, deadline + 1.0) << message;
  if (world_rank() == 0 || late) std::printf("  rank %d after %.2f s: %s\n", world_rank(), waited, message.c_str());
  // Let the late rank's abandoned collectives settle before the next test's barrier.
  if (!late) std::this_thread::sleep_for(std::chrono::duration<double>(2.5 * deadline));
}

TEST(Timeout, ARankLateForCreationFailsToo) {
  if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
  expect_late_creation_to_time_out(small_options(1.0), 1.0);
}

// options.timeout_s = 0 takes RFA_TIMEOUT_S's deadline, creation's collectives included.
TEST(Timeout, ARankLateForCreationFailsAtTheEnvironmentsDeadline) {
  if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
  setenv("RFA_TIMEOUT_S", "0.5", 1);
  expect_late_creation_to_time_out(small_options(0.0), 0.5);
  unsetenv("RFA_TIMEOUT_S");
}

// A malformed RFA_TIMEOUT_S on one rank (options.timeout_s = 0 leaves the deadline to it) fails
// creation on every rank at once, naming it, where the other ranks would wait in the creation's
// collectives until their own deadline (5 s here); the handle is NULL after the failure.
TEST(Timeout, AMalformedEnvironmentDeadlineOnOneRankFailsEveryRankAtOnce) {
  if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
  setenv("RFA_TIMEOUT_S", world_rank() == world_size() - 1 ? "soon" : "5", 1);
  const rfa_options_t o = small_options(0.0);
  rfa_context_t ctx = reinterpret_cast<rfa_context_t>(std::uintptr_t(1));
  const auto start = clock_type::now();
  const int bad = world_size() - 1;
  if (world_rank() == bad) {
    EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_context_create(MPI_COMM_WORLD, &o, &ctx), "RFA_TIMEOUT_S",
                     "'soon'");
  } else {
    const std::string names_it = "rank(s) " + std::to_string(bad) + " ";
    EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_context_create(MPI_COMM_WORLD, &o, &ctx), names_it.c_str());
  }
  EXPECT_LT(seconds_since(start), 4.0) << "the other ranks waited for their deadline";
  EXPECT_EQ(ctx, nullptr);
  unsetenv("RFA_TIMEOUT_S");
}

// options.timeout_s of 0 leaves the deadline to RFA_TIMEOUT_S, which each rank reads from its
// own environment: set differently (5 s on one rank, none on the others), the ranks would keep
// different deadlines, and one would wait for good where another gave up. Creation is refused
// on every rank, naming it.
TEST(Timeout, AnEnvironmentDeadlineThatDiffersBetweenRanksIsRefused) {
  if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
  setenv("RFA_TIMEOUT_S", world_rank() == 0 ? "5" : "0", 1);
  const rfa_options_t o = small_options(0.0);
  rfa_context_t ctx = nullptr;
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_USAGE, rfa_context_create(MPI_COMM_WORLD, &o, &ctx),
                   "options.timeout_s (after RFA_TIMEOUT_S)", "rank 0 passes 5");
  EXPECT_EQ(ctx, nullptr);
  // The same deadline said either way agrees: 5 s from the options on one rank, from the
  // environment on the others.
  rfa_options_t mixed = small_options(world_rank() == 0 ? 5.0 : 0.0);
  setenv("RFA_TIMEOUT_S", "5", 1);
  ASSERT_RFA_OK(rfa_context_create(MPI_COMM_WORLD, &mixed, &ctx));
  ASSERT_RFA_OK(rfa_context_destroy(ctx));
  unsetenv("RFA_TIMEOUT_S");
}

TEST(Timeout, NonFiniteOptionIsRefusedOnEveryRank) {
  rfa_options_t o = small_options(0.0);
  o.timeout_s = std::numeric_limits<double>::quiet_NaN();
  rfa_context_t ctx = nullptr;
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_context_create(MPI_COMM_WORLD, &o, &ctx), "timeout_s");
  EXPECT_EQ(ctx, nullptr);
}

}  // namespace
