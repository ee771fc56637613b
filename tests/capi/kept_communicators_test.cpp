// SPDX-License-Identifier: BSD-3-Clause
// The communicators of timed-out calls, which MPI keeps for the life of the process: once a rank
// keeps as many as RFA_MAX_KEPT_COMMUNICATORS allows, rfa_context_create fails on every rank of
// the creation with RFA_ERROR_INVALID_USAGE, before any split, instead of one rank running out
// of communicators inside MPI_Comm_split and leaving the others blocked there. Under mpiexec
// -n 2..3: every rank but the last times out in a forward its last rank never calls, so only
// they keep communicators. One test: the process's count only grows.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "capi_test_support.hpp"
#include "mpi_test_support.hpp"
#include "rfa/rfa_mpi.h"
#include "scoped_env.hpp"

namespace {

using namespace rfa_capi_test;
using rfa::test::barrier_idle;
using rfa::test::ScopedEnv;

constexpr const char* kLimit = "RFA_MAX_KEPT_COMMUNICATORS";

rfa_options_t options_with_deadline() {
  rfa_options_t o = small_problem(RFA_LAYOUT_CONTIGUOUS, 8);
  o.timeout_s = 1.0;  // also the creations' deadline: generous for 3 ranks on 2 loaded cores
  return o;
}

struct Buffers {
  std::vector<float> q, k, v, out, lse;
  explicit Buffers(const rfa_options_t& o) {
    const auto L = std::size_t(o.seq_total / world_size());
    q.assign(L * std::size_t(o.heads * o.head_dim), 0.5f);
    k.assign(L * std::size_t(o.kv_heads * o.head_dim), 0.25f);
    v.assign(k.size(), 1.0f);
    out.assign(q.size(), 0.0f);
    lse.assign(L * std::size_t(o.heads), 0.0f);
  }
};

/// The most of every rank's `value` (collective over MPI_COMM_WORLD).
std::int64_t most_on_any_rank(std::int64_t value) {
  MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
  return value;
}

/// A creation over MPI_COMM_WORLD and, on every rank but the last, a forward that times out
/// because the last rank never calls it; the last rank waits for the others' verdicts, then
/// every rank destroys. Returns whether this rank's forward timed out (its communicator kept).
bool one_timed_out_forward(const rfa_options_t& o) {
  rfa_context_t ctx = nullptr;
  EXPECT_EQ(int(rfa_context_create(MPI_COMM_WORLD, &o, &ctx)), int(RFA_SUCCESS)) << rfa_get_last_error_message();
  bool timed_out = false;
  if (world_rank() != world_size() - 1) {
    Buffers b(o);
    const rfa_result_t rc = rfa_forward(ctx, b.q.data(), b.k.data(), b.v.data(), b.out.data(), b.lse.data());
    EXPECT_EQ(int(rc), int(RFA_ERROR_TIMEOUT)) << rfa_get_last_error_message();
    timed_out = rc == RFA_ERROR_TIMEOUT;
  }
  barrier_idle(MPI_COMM_WORLD);
  // The timed-out ranks' contexts are unusable and destroyed without agreement; the last rank's
  // destroy meets their forward in the agreement (the context is destroyed either way).
  const rfa_result_t destroyed = rfa_context_destroy(ctx);
  if (timed_out || destroyed != RFA_ERROR_CALL_MISMATCH) {
    EXPECT_EQ(int(destroyed), int(RFA_SUCCESS)) << rfa_get_last_error_message();
  }
  return timed_out;
}

// Every rank takes the same path through it whatever fails (EXPECTs; the one ASSERT compares a
// value every rank agrees on), so a failure on one rank never leaves the others in a collective.
TEST(KeptCommunicators, CreationStopsOnEveryRankOnceOneRankKeepsTheMost) {
  if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
  const rfa_options_t o = options_with_deadline();
  const bool keeps = world_rank() != world_size() - 1;

  // A limit that is no whole number from 1 to 1000000, on one rank only, fails every rank
  // before anything is created; the largest is taken.
  for (const char* bad : {"0", "-1", "1000001", "3x", " 3", "+3", "99999999999999999999", "many"}) {
    SCOPED_TRACE(bad);
    const ScopedEnv env(kLimit, world_rank() == 0 ? bad : "3");
    rfa_context_t ctx = nullptr;
    if (world_rank() == 0) {
      EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_context_create(MPI_COMM_WORLD, &o, &ctx), kLimit, bad);
    } else {
      EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_context_create(MPI_COMM_WORLD, &o, &ctx), "rank(s) 0", kLimit,
                       bad);
    }
    EXPECT_EQ(ctx, nullptr);
  }
  {
    const ScopedEnv env(kLimit, "1000000");
    rfa_context_t ctx = nullptr;
    EXPECT_EQ(int(rfa_context_create(MPI_COMM_WORLD, &o, &ctx)), int(RFA_SUCCESS)) << rfa_get_last_error_message();
    EXPECT_EQ(int(rfa_context_destroy(ctx)), int(RFA_SUCCESS)) << rfa_get_last_error_message();
  }

  // Up to the limit, every creation goes on; at it, every rank fails, the ranks that keep the
  // communicators saying how many, the last rank repeating rank 0's message.
  const ScopedEnv env(kLimit, "3");
  std::int64_t timeouts = 0;
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(most_on_any_rank(timeouts), i);
    timeouts += one_timed_out_forward(o) ? 1 : 0;
  }
  EXPECT_EQ(timeouts, keeps ? 3 : 0);
  rfa_context_t ctx = nullptr;
  if (keeps) {
    EXPECT_RFA_FAILS(RFA_ERROR_INVALID_USAGE, rfa_context_create(MPI_COMM_WORLD, &o, &ctx),
                     "keeps 3 MPI communicators of calls that timed out", "past 3 (RFA_MAX_KEPT_COMMUNICATORS)",
                     "End the job");
  } else {
    EXPECT_RFA_FAILS(RFA_ERROR_INVALID_USAGE, rfa_context_create(MPI_COMM_WORLD, &o, &ctx),
                     "rank 0: rfa_context_create: this process keeps 3 MPI communicators", "End the job");
  }
  EXPECT_EQ(ctx, nullptr);

  // The verdict is the process's: alone on MPI_COMM_SELF, a rank that keeps none still creates.
  rfa_options_t alone = o;
  alone.seq_total = o.seq_total / world_size();
  if (keeps) {
    EXPECT_RFA_FAILS(RFA_ERROR_INVALID_USAGE, rfa_context_create(MPI_COMM_SELF, &alone, &ctx), "keeps 3");
    EXPECT_EQ(ctx, nullptr);
  } else {
    EXPECT_EQ(int(rfa_context_create(MPI_COMM_SELF, &alone, &ctx)), int(RFA_SUCCESS)) << rfa_get_last_error_message();
    EXPECT_EQ(int(rfa_context_destroy(ctx)), int(RFA_SUCCESS)) << rfa_get_last_error_message();
  }

  // The limit is read at each creation: one more allows one more timed-out context, then stops.
  {
    const ScopedEnv more(kLimit, "4");
    timeouts += one_timed_out_forward(o) ? 1 : 0;
    EXPECT_EQ(timeouts, keeps ? 4 : 0);
    EXPECT_RFA_FAILS(RFA_ERROR_INVALID_USAGE, rfa_context_create(MPI_COMM_WORLD, &o, &ctx), "keeps 4");
  }
  barrier_idle(MPI_COMM_WORLD);
}

}  // namespace
