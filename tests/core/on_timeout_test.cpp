// SPDX-License-Identifier: BSD-3-Clause
// core/error.hpp's on_timeout, how the waits under a deadline keep what a timeout leaves behind:
// the work's value passes through, a timeout reaches the handler and then the caller, any other
// error reaches the caller only.
#include <gtest/gtest.h>

#include "core/error.hpp"

namespace rfa {
namespace {

TEST(OnTimeout, PassesTheValueThrough) {
  int handled = 0;
  EXPECT_EQ(on_timeout([] { return 7; }, [&](const Error&) { ++handled; }), 7);
  EXPECT_EQ(handled, 0);
}

TEST(OnTimeout, HandlesATimeoutThenRethrowsIt) {
  std::string seen;
  try {
    on_timeout([] { fail(RFA_ERROR_TIMEOUT, "a stream did not complete"); }, [&](const Error& e) { seen = e.what(); });
    FAIL() << "the timeout did not reach the caller";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), RFA_ERROR_TIMEOUT);
  }
  EXPECT_EQ(seen, "a stream did not complete");
}

TEST(OnTimeout, LeavesOtherErrorsAlone) {
  int handled = 0;
  try {
    on_timeout([] { fail(RFA_ERROR_CUDA, "a kernel failed"); }, [&](const Error&) { ++handled; });
    FAIL() << "the error did not reach the caller";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), RFA_ERROR_CUDA);
  }
  EXPECT_EQ(handled, 0);
}

}  // namespace
}  // namespace rfa
