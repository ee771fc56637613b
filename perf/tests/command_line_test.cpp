// SPDX-License-Identifier: BSD-3-Clause
// perf/common/command_line.hpp: numbers read whole and within their bounds, at the bounds and
// one either side, and refusals that name the option and the text.
#include "command_line.hpp"

#include <gtest/gtest.h>

#include <climits>
#include <cstdint>
#include <string>

namespace {

using rfa::perf::OptionError;
using rfa::perf::real_number;
using rfa::perf::whole_int;
using rfa::perf::whole_ints;
using rfa::perf::whole_number;
using rfa::perf::whole_numbers;

/// The message whole_number() & co. refuse `read` with ("" where it does not refuse).
template <class Read>
std::string refusal(Read&& read) {
  try {
    read();
  } catch (const OptionError& e) {
    return e.what();
  }
  return "";
}

TEST(WholeNumber, ReadsAWholeNumberAtAndBetweenItsBounds) {
  EXPECT_EQ(whole_number("--seq", "8192", 1), 8192);
  EXPECT_EQ(whole_number("--seq", "1", 1), 1);
  EXPECT_EQ(whole_number("--ranks", "0", 0, 8), 0);
  EXPECT_EQ(whole_number("--ranks", "8", 0, 8), 8);
  EXPECT_EQ(whole_number("--seq", "9223372036854775807", 1), INT64_MAX);
}

TEST(WholeNumber, RefusesOneBelowAndOneAboveItsBounds) {
  EXPECT_EQ(refusal([] { whole_number("--seq", "0", 1); }), "--seq expects a whole number >= 1, got '0'");
  EXPECT_EQ(refusal([] { whole_number("--ranks", "-1", 0, 8); }),
            "--ranks expects a whole number from 0 to 8, got '-1'");
  EXPECT_EQ(refusal([] { whole_number("--ranks", "9", 0, 8); }), "--ranks expects a whole number from 0 to 8, got '9'");
}

TEST(WholeNumber, RefusesTextThatIsNotWhollyANumber) {
  for (const char* text : {"", "12x", "x12", "1.5", "1e3", "12 ", " 12", "0x10", "--5"})
    EXPECT_EQ(refusal([&] { whole_number("--seq", text, 1); }),
              std::string("--seq expects a whole number >= 1, got '") + text + "'")
        << text;
}

TEST(WholeNumber, RefusesWhatDoesNotFitInSixtyFourBits) {
  EXPECT_NE(refusal([] { whole_number("--seq", "9223372036854775808", 1); }), "");
  EXPECT_NE(refusal([] { whole_number("--seq", "-9223372036854775809", INT64_MIN); }), "");
}

TEST(WholeInt, ShowsTheIntBoundOnlyWhereTheValuePassedIt) {
  EXPECT_EQ(whole_int("--repeat", "2147483647", 1), INT_MAX);
  EXPECT_EQ(refusal([] { whole_int("--repeat", "2147483648", 1); }),
            "--repeat expects a whole number from 1 to 2147483647, got '2147483648'");
  EXPECT_EQ(refusal([] { whole_int("--repeat", "0", 1); }), "--repeat expects a whole number >= 1, got '0'");
}

TEST(RealNumber, ReadsFiniteNumbersWithinItsBounds) {
  EXPECT_DOUBLE_EQ(real_number("--sigma", "1.2", 0), 1.2);
  EXPECT_DOUBLE_EQ(real_number("--sigma", "0", 0), 0.0);
  EXPECT_DOUBLE_EQ(real_number("--median", "1e3", 1), 1000.0);
  EXPECT_DOUBLE_EQ(real_number("--share", "1", 0, 1), 1.0);
}

TEST(RealNumber, RefusesNonFiniteTrailingAndOutOfBounds) {
  for (const char* text : {"", "nan", "inf", "-inf", "1.5x", " 1.5", "1e999"})
    EXPECT_EQ(refusal([&] { real_number("--sigma", text, 0); }),
              std::string("--sigma expects a number >= 0, got '") + text + "'")
        << text;
  EXPECT_EQ(refusal([] { real_number("--share", "1.01", 0, 1); }), "--share expects a number from 0 to 1, got '1.01'");
  EXPECT_EQ(refusal([] { real_number("--sigma", "-0.5", 0); }), "--sigma expects a number >= 0, got '-0.5'");
}

TEST(WholeNumbers, ReadsACommaSeparatedList) {
  EXPECT_EQ(whole_numbers("--ranks", "2,4,8", 1), (std::vector<std::int64_t>{2, 4, 8}));
  EXPECT_EQ(whole_numbers("--ranks", "3", 1), (std::vector<std::int64_t>{3}));
}

TEST(WholeInts, ReadsIntsAndRefusesWhatAnIntOrTheGivenBoundCannotHold) {
  EXPECT_EQ(whole_ints("--ranks", "2,2147483647", 1), (std::vector<int>{2, INT_MAX}));
  EXPECT_EQ(refusal([] { whole_ints("--ranks", "2,4294967296", 1); }),
            "--ranks expects a whole number from 1 to 2147483647, got '4294967296'");
  EXPECT_EQ(whole_ints("--ranks", "1073741823", 1, INT_MAX / 2), (std::vector<int>{INT_MAX / 2}));
  EXPECT_EQ(refusal([] { whole_ints("--ranks", "1073741824", 1, INT_MAX / 2); }),
            "--ranks expects a whole number from 1 to 1073741823, got '1073741824'");
}

TEST(WholeNumbers, RefusesEmptyItemsAndItemsBelowItsBound) {
  EXPECT_EQ(refusal([] { whole_numbers("--ranks", "2,,4", 1); }), "--ranks expects a whole number >= 1, got ''");
  EXPECT_EQ(refusal([] { whole_numbers("--ranks", "2,0", 1); }), "--ranks expects a whole number >= 1, got '0'");
  EXPECT_EQ(refusal([] { whole_numbers("--ranks", "", 1); }),
            "--ranks expects a list of whole numbers >= 1 separated by commas, got ''");
  EXPECT_EQ(refusal([] { whole_numbers("--ranks", "2,4,", 1); }),
            "--ranks expects a list of whole numbers >= 1 separated by commas, got '2,4,'");
}

}  // namespace
