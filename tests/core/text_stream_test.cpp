// SPDX-License-Identifier: BSD-3-Clause
// src/core/text_stream.hpp under a host program's global C++ locale that groups thousands and
// writes a decimal comma: rfa's streams, its number formats and the messages of its errors
// write numbers as the classic locale does (a count of 4096 as "4096", never "4.096").
#include "core/text_stream.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <ios>
#include <sstream>
#include <string>

#include "core/error.hpp"
#include "grouping_locale.hpp"

namespace rfa {
namespace {

TEST(TextStream, WritesNumbersInTheClassicLocale) {
  const test::GlobalGroupingLocale grouping;
  std::ostringstream program;  // what a stream of the program writes: the premise
  program << 4096 << " " << 0.5;
  ASSERT_EQ(program.str(), "4.096 0,5");
  TextStream s;
  s << 4096 << " " << 0.5 << " " << std::hex << std::uint64_t(0x8cf3707b570dbecULL) << std::dec << " "
    << std::int64_t(-1234567);
  EXPECT_EQ(s.str(), "4096 0.5 8cf3707b570dbec -1234567");
}

TEST(TextStream, NumberFormatsAreThoseOfPrintfInTheCLocale) {
  const test::GlobalGroupingLocale grouping;
  EXPECT_EQ(general_number(60.7349, 3), "60.7");
  EXPECT_EQ(general_number(1234.56, 4), "1235");
  EXPECT_EQ(general_number(123456.0, 3), "1.23e+05");
  EXPECT_EQ(general_number(15.0, 6), "15");
  EXPECT_EQ(general_number(0.000125, 3), "0.000125");
  EXPECT_EQ(fixed_number(1.25, 1), "1.2");  // halfway: to even, as printf
  EXPECT_EQ(fixed_number(1536.0, 1), "1536.0");
}

TEST(TextStream, ErrorMessagesIgnoreTheProgramsLocale) {
  const test::GlobalGroupingLocale grouping;
  try {
    fail(RFA_ERROR_INVALID_USAGE, "rank 0 passes ", std::int64_t(4096), ", rank 1 passes ", 2048, " at ", 0.5);
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "rank 0 passes 4096, rank 1 passes 2048 at 0.5");
  }
}

}  // namespace
}  // namespace rfa
