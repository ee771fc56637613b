// SPDX-License-Identifier: BSD-3-Clause
// core/polling.hpp's poll_until, the wait under every deadline on device work (NCCL, the
// staged copies, a CUDA stream): ready at once, ready after some polls, never ready (false
// within the deadline, having polled once more at it), ready only at the deadline, and no
// deadline at all.
#include "core/polling.hpp"

#include <gtest/gtest.h>

#include <chrono>

namespace rfa {
namespace {

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

TEST(PollUntil, ReadyAtOncePollsOnce) {
  int polls = 0;
  EXPECT_TRUE(poll_until(
      [&] {
        ++polls;
        return true;
      },
      1.0));
  EXPECT_EQ(polls, 1);
}

TEST(PollUntil, ReadyAfterSomePolls) {
  int polls = 0;
  EXPECT_TRUE(poll_until([&] { return ++polls == 5; }, 10.0));
  EXPECT_EQ(polls, 5);
}

TEST(PollUntil, NeverReadyEndsAtTheDeadline) {
  int polls = 0;
  Clock::time_point last_poll;
  const Clock::time_point start = Clock::now();
  EXPECT_FALSE(poll_until(
      [&] {
        ++polls;
        last_poll = Clock::now();
        return false;
      },
      0.2));
  const double took = seconds_since(start);
  EXPECT_GE(took, 0.2);
  EXPECT_LT(took, 2.0) << "the deadline is 0.2 s";
  EXPECT_GT(polls, 2);
  EXPECT_GE(std::chrono::duration<double>(last_poll - start).count(), 0.2) << "polled once more at the deadline";
}

TEST(PollUntil, WorkDoneByTheDeadlineIsNotReportedLate) {
  // Ready from 0.2 s on: whatever the polls' spacing, the poll at the deadline sees it.
  const Clock::time_point start = Clock::now();
  EXPECT_TRUE(poll_until([&] { return seconds_since(start) >= 0.2; }, 0.2));
}

TEST(PollUntil, NoDeadlineWaitsAsLongAsItTakes) {
  const Clock::time_point start = Clock::now();
  EXPECT_TRUE(poll_until([&] { return seconds_since(start) >= 0.3; }, 0.0));
  EXPECT_TRUE(poll_until([&] { return seconds_since(start) >= 0.4; }, -1.0));
  EXPECT_GE(seconds_since(start), 0.4);
}

}  // namespace
}  // namespace rfa
