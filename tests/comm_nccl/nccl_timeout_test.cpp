// SPDX-License-Identifier: BSD-3-Clause
// RFA_NCCL_TIMEOUT_S parsing and precedence (no GPU, no MPI needed).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <limits>

#include "../comm/comm_test_support.hpp"
#include "comm/nccl/nccl_timeout.hpp"
#include "core/polling.hpp"

namespace rfa::comm::nccl {
namespace {

using rfa::comm::testing::expect_error;

TEST(NcclTimeout, ParsesSecondsAndDefaultsWhenUnset) {
  EXPECT_EQ(parse_timeout_seconds(nullptr, "X"), kDefaultTimeoutSeconds);
  EXPECT_EQ(parse_timeout_seconds("", "X"), kDefaultTimeoutSeconds);
  EXPECT_EQ(parse_timeout_seconds("2.5", "X"), 2.5);
  EXPECT_EQ(parse_timeout_seconds("600", "X"), 600.0);
}

TEST(NcclTimeout, RejectsWhatIsNotAPositiveNumber) {
  for (const char* bad : {"0", "-1", "abc", "5s", "nan", "inf", " "}) {
    const std::string message =
        expect_error(RFA_ERROR_INVALID_ARGUMENT, [&] { parse_timeout_seconds(bad, "RFA_NCCL_TIMEOUT_S"); });
    EXPECT_NE(message.find("RFA_NCCL_TIMEOUT_S"), std::string::npos) << message;
  }
}

// The convention of every internal deadline: > 0 seconds, 0 none, < 0 the environment's.
TEST(NcclTimeout, OptionsWinOverTheEnvironment) {
  setenv("RFA_NCCL_TIMEOUT_S", "7", 1);
  EXPECT_EQ(resolve_timeout_seconds(-1), 7.0);
  EXPECT_EQ(resolve_timeout_seconds(3), 3.0);
  EXPECT_EQ(resolve_timeout_seconds(0), std::numeric_limits<double>::infinity());  // no deadline
  setenv("RFA_NCCL_TIMEOUT_S", "seven", 1);
  expect_error(RFA_ERROR_INVALID_ARGUMENT, [] { resolve_timeout_seconds(-1); });
  EXPECT_EQ(resolve_timeout_seconds(3), 3.0);  // the environment is not read
  unsetenv("RFA_NCCL_TIMEOUT_S");
  EXPECT_EQ(resolve_timeout_seconds(-1), kDefaultTimeoutSeconds);
}

// "No deadline" saturates to a point far in the future, not an overflow or the start.
TEST(NcclTimeout, NoDeadlineIsFarAway) {
  const Clock::time_point start = Clock::now();
  EXPECT_GT(deadline_after(start, resolve_timeout_seconds(0)), start + std::chrono::hours(24 * 365));
}

}  // namespace
}  // namespace rfa::comm::nccl
