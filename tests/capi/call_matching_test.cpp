// SPDX-License-Identifier: BSD-3-Clause
// Ranks that disagree on what they call (under mpiexec -n 2..4, deadlines of 2 s): each case
// must end on every rank with an error within the deadline plus a margin, write nothing to the
// outputs of a refused call, and leave nothing hanging (the test's own exit is the proof).
// The matching rules are those of docs/architecture.md §6.7: every collective call on a
// context agrees on the operation, the context and the call's number before any data moves.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "capi_test_support.hpp"
#include "rfa/rfa_mpi.h"

namespace {

using namespace rfa_capi_test;
using clock_type = std::chrono::steady_clock;

constexpr double kDeadline = 2.0;
constexpr double kMargin = 3.0;  // seconds a failure may take past the deadline (loaded, sanitized CI machines)

rfa_options_t small_options() {
  rfa_options_t o = small_problem(RFA_LAYOUT_ZIGZAG, 16);
  o.timeout_s = kDeadline;
  o.check_values = RFA_VALUE_CHECKS_OFF;
  return o;
}

constexpr float kUntouched = 12345.0f;  // what an output holds until rfa writes it

/// One rank's tensors for a context, outputs filled with kUntouched.
struct Tensors {
  std::vector<float> q, k, v, out, lse, dout, dq, dk, dv;
  explicit Tensors(rfa_context_t ctx) {
    rfa_options_t o;
    rfa_options_init(&o);
    rfa_context_get_options(ctx, &o);
    int64_t L = 0;
    rfa_context_get_local_seq(ctx, &L);
    const auto qn = std::size_t(o.batch * L * o.heads * o.head_dim);
    const auto kvn = std::size_t(o.batch * L * o.kv_heads * o.head_dim);
    const auto values = random_values(qn, 11);
    q.assign(values.begin(), values.end());
    k.assign(values.begin(), values.begin() + std::ptrdiff_t(kvn));
    v.assign(values.rbegin(), values.rbegin() + std::ptrdiff_t(kvn));
    dout = q;
    out.assign(qn, kUntouched);
    lse.assign(std::size_t(o.batch * o.heads * L), kUntouched);
    dq.assign(qn, kUntouched);
    dk.assign(kvn, kUntouched);
    dv.assign(kvn, kUntouched);
  }
  rfa_result_t forward(rfa_context_t ctx) {
    return rfa_forward(ctx, q.data(), k.data(), v.data(), out.data(), lse.data());
  }
  rfa_result_t backward(rfa_context_t ctx) {
    return rfa_backward(ctx, q.data(), k.data(), v.data(), out.data(), dout.data(), lse.data(), dq.data(), dk.data(),
                        dv.data());
  }
  bool forward_outputs_untouched() const { return all_untouched(out) && all_untouched(lse); }
  bool backward_outputs_untouched() const { return all_untouched(dq) && all_untouched(dk) && all_untouched(dv); }

 private:
  static bool all_untouched(const std::vector<float>& t) {
    for (float x : t)
      if (x != kUntouched) return false;
    return true;
  }
};

double seconds_since(clock_type::time_point start) {
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

/// Runs one rfa call, timing it; the code, the message and the seconds.
struct Outcome {
  rfa_result_t code;
  std::string message;
  double seconds;
};
template <class Call>
Outcome timed(Call&& call) {
  const auto start = clock_type::now();
  const rfa_result_t rc = call();
  return {rc, rfa_get_last_error_message(), seconds_since(start)};
}

void expect_in_time(const Outcome& o, const char* what) {
  EXPECT_LE(o.seconds, kDeadline + kMargin) << what << " took " << o.seconds << " s: " << o.message;
  std::printf("  rank %d, %s: code %d after %.2f s: %s\n", world_rank(), what, int(o.code), o.seconds,
              o.message.c_str());
}

class CallMatching : public ::testing::Test {
 protected:
  void SetUp() override {
    if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
    rfa::test::barrier_idle(MPI_COMM_WORLD);  // start together
    o_ = small_options();
  }
  rfa_options_t o_{};
};

// The case from the field: rank 0 calls rfa_forward while the others call rfa_backward. Both
// sides fail at once naming both calls; nothing is written; the context refuses further work
// and is destroyed without waiting.
TEST_F(CallMatching, ForwardAgainstBackwardFailsEveryRankBeforeAnythingMoves) {
  rfa_context_t ctx = nullptr;
  ASSERT_RFA_OK(rfa_context_create(MPI_COMM_WORLD, &o_, &ctx));
  Tensors t(ctx);
  const bool forward = world_rank() == 0;
  const Outcome got = timed([&] { return forward ? t.forward(ctx) : t.backward(ctx); });
  expect_in_time(got, forward ? "rfa_forward" : "rfa_backward");
  EXPECT_EQ(int(got.code), int(RFA_ERROR_CALL_MISMATCH)) << got.message;
  EXPECT_NE(got.message.find("ring position 0 is in rfa_forward"), std::string::npos) << got.message;
  EXPECT_NE(got.message.find("in rfa_backward"), std::string::npos) << got.message;
  EXPECT_TRUE(forward ? t.forward_outputs_untouched() : t.backward_outputs_untouched())
      << "a call refused by the call agreement wrote its outputs";
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_USAGE, t.forward(ctx), "unusable", "different calls");
  // The calls on its stream and workspace are refused too; the queries and the local sharding
  // helpers still answer.
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_USAGE, rfa_context_synchronize(ctx), "unusable", "different calls");
  int64_t released = -1;
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_USAGE, rfa_context_release_workspace(ctx, &released), "unusable");
  EXPECT_EQ(released, -1);
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_USAGE, rfa_context_set_stream(ctx, nullptr), "unusable");
  int64_t L = 0;
  EXPECT_EQ(int(rfa_context_get_local_seq(ctx, &L)), int(RFA_SUCCESS));
  EXPECT_GT(L, 0);
  std::vector<float> whole(std::size_t(o_.batch * o_.seq_total * o_.heads * o_.head_dim), 1.0f),
      mine(std::size_t(o_.batch * L * o_.heads * o_.head_dim));
  EXPECT_EQ(int(rfa_scatter_bshd(ctx, o_.heads, whole.data(), mine.data())), int(RFA_SUCCESS))
      << rfa_get_last_error_message();
  const Outcome destroyed = timed([&] { return rfa_context_destroy(ctx); });
  EXPECT_EQ(int(destroyed.code), int(RFA_SUCCESS)) << destroyed.message;
  EXPECT_LE(destroyed.seconds, 0.75 * kDeadline) << "destroying an unusable context must not wait for anyone";
}

// Rank 0 makes one call more than the others, who destroy the context meanwhile: rank 0's
// extra call and the others' destroy meet, and all fail together; every handle is gone.
TEST_F(CallMatching, OneExtraCallOnOneRankMeetsTheOthersDestroy) {
  rfa_context_t ctx = nullptr;
  ASSERT_RFA_OK(rfa_context_create(MPI_COMM_WORLD, &o_, &ctx));
  Tensors t(ctx);
  ASSERT_RFA_OK(t.forward(ctx));
  if (world_rank() == 0) {
    Tensors again(ctx);
    const Outcome extra = timed([&] { return again.forward(ctx); });
    expect_in_time(extra, "the extra rfa_forward");
    EXPECT_EQ(int(extra.code), int(RFA_ERROR_CALL_MISMATCH)) << extra.message;
    EXPECT_NE(extra.message.find("rfa_context_destroy"), std::string::npos) << extra.message;
    EXPECT_TRUE(again.forward_outputs_untouched());
    const Outcome destroyed = timed([&] { return rfa_context_destroy(ctx); });
    EXPECT_EQ(int(destroyed.code), int(RFA_SUCCESS)) << destroyed.message;
  } else {
    const Outcome destroyed = timed([&] { return rfa_context_destroy(ctx); });
    expect_in_time(destroyed, "rfa_context_destroy");
    EXPECT_EQ(int(destroyed.code), int(RFA_ERROR_CALL_MISMATCH)) << destroyed.message;
    EXPECT_NE(destroyed.message.find("rfa_forward"), std::string::npos) << destroyed.message;
    // The handle is gone whatever the agreement said.
    EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_context_destroy(ctx), "not a live rfa context");
  }
}

// Rank 0 destroys the context while the others call rfa_forward on it.
TEST_F(CallMatching, DestroyWhileAnotherRankCallsFailsBothSides) {
  rfa_context_t ctx = nullptr;
  ASSERT_RFA_OK(rfa_context_create(MPI_COMM_WORLD, &o_, &ctx));
  Tensors t(ctx);
  if (world_rank() == 0) {
    const Outcome destroyed = timed([&] { return rfa_context_destroy(ctx); });
    expect_in_time(destroyed, "rfa_context_destroy");
    EXPECT_EQ(int(destroyed.code), int(RFA_ERROR_CALL_MISMATCH)) << destroyed.message;
  } else {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the destroy is already waiting
    const Outcome got = timed([&] { return t.forward(ctx); });
    expect_in_time(got, "rfa_forward");
    EXPECT_EQ(int(got.code), int(RFA_ERROR_CALL_MISMATCH)) << got.message;
    EXPECT_NE(got.message.find("rfa_context_destroy"), std::string::npos) << got.message;
    EXPECT_TRUE(t.forward_outputs_untouched());
    ASSERT_RFA_OK(rfa_context_destroy(ctx));
  }
}

// Two contexts over the same ranks, called in different orders: each rank waits in a
// different context, which no agreement can see; every call ends by its deadline instead.
// Every rank turns to its second context only a while after its first call timed out, when the
// others have given up on that context too: a rank arriving within another's deadline would
// meet it in that context's first call, which is then a call every rank made, and succeeds.
TEST_F(CallMatching, TwoContextsCalledInDifferentOrdersEndByTheDeadline) {
  rfa_context_t a = nullptr, b = nullptr;
  ASSERT_RFA_OK(rfa_context_create(MPI_COMM_WORLD, &o_, &a));
  ASSERT_RFA_OK(rfa_context_create(MPI_COMM_WORLD, &o_, &b));
  Tensors ta(a), tb(b);
  const bool a_first = world_rank() == 0;
  const Outcome first = timed([&] { return a_first ? ta.forward(a) : tb.forward(b); });
  expect_in_time(first, "the first context's rfa_forward");
  EXPECT_EQ(int(first.code), int(RFA_ERROR_TIMEOUT)) << first.message;
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const Outcome second = timed([&] { return a_first ? tb.forward(b) : ta.forward(a); });
  expect_in_time(second, "the second context's rfa_forward");
  EXPECT_NE(int(second.code), int(RFA_SUCCESS)) << "ranks that never met in a call must not succeed";
  const Outcome destroyed = timed([&] {
    const rfa_result_t ra = rfa_context_destroy(a), rb = rfa_context_destroy(b);
    return ra != RFA_SUCCESS ? ra : rb;
  });
  expect_in_time(destroyed, "rfa_context_destroy of both");
}

}  // namespace
