// SPDX-License-Identifier: BSD-3-Clause
// RFA_NCCL_TIMEOUT_S parsing and precedence (no GPU, no MPI needed).
#include <gtest/gtest.h>

#include <cstdlib>

#include "../comm/comm_test_support.hpp"
#include "comm/nccl/nccl_timeout.hpp"

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

TEST(NcclTimeout, OptionsWinOverTheEnvironment) {
  setenv("RFA_NCCL_TIMEOUT_S", "7", 1);
  EXPECT_EQ(resolve_timeout_seconds(0), 7.0);
  EXPECT_EQ(resolve_timeout_seconds(-1), 7.0);
  EXPECT_EQ(resolve_timeout_seconds(3), 3.0);
  setenv("RFA_NCCL_TIMEOUT_S", "seven", 1);
  expect_error(RFA_ERROR_INVALID_ARGUMENT, [] { resolve_timeout_seconds(0); });
  unsetenv("RFA_NCCL_TIMEOUT_S");
  EXPECT_EQ(resolve_timeout_seconds(0), kDefaultTimeoutSeconds);
}

}  // namespace
}  // namespace rfa::comm::nccl
