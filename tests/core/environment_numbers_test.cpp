// SPDX-License-Identifier: BSD-3-Clause
// src/core/environment's readers of numbers, the one rule of every numeric variable librfa reads:
// whole numbers are decimal digits only and within their bounds; decimal numbers are strtod's
// forms with nothing after them, read in the "C" locale even where the program chose one with a
// decimal comma (a de_DE locale built here with localedef, where the machine has its sources).
#include <gtest/gtest.h>
#include <locale.h>
#include <unistd.h>

#include <cstdlib>
#include <limits>
#include <string>

#include "core/environment.hpp"

namespace rfa {
namespace {

TEST(WholeNumber, TakesDigitsWithinTheBounds) {
  long long v = -7;
  EXPECT_TRUE(parse_whole_number("0", 0, 10, &v));
  EXPECT_EQ(v, 0);
  EXPECT_TRUE(parse_whole_number("10", 0, 10, &v));
  EXPECT_EQ(v, 10);
  EXPECT_TRUE(parse_whole_number("007", 1, 10, &v));
  EXPECT_EQ(v, 7);
  EXPECT_TRUE(parse_whole_number("2147483647", 0, std::numeric_limits<int>::max(), &v));
  EXPECT_EQ(v, 2147483647);
  EXPECT_TRUE(parse_whole_number("9223372036854775807", 0, std::numeric_limits<long long>::max(), &v));
  EXPECT_EQ(v, std::numeric_limits<long long>::max());
}

TEST(WholeNumber, RefusesAnythingElseAndLeavesTheValue) {
  for (const char* bad : {"", " 5", "+5", "-1", "5 ", "5x", "x", "2.5", "1e3", "0x10", "11", "9223372036854775808",
                          "99999999999999999999", "\t5"}) {
    long long v = 42;
    EXPECT_FALSE(parse_whole_number(bad, 0, 10, &v)) << "'" << bad << "'";
    EXPECT_EQ(v, 42) << "'" << bad << "' changed the value";
  }
  long long v = 42;
  EXPECT_FALSE(parse_whole_number(nullptr, 0, 10, &v));
  EXPECT_FALSE(parse_whole_number("0", 1, 10, &v)) << "below the least";
  EXPECT_EQ(v, 42);
}

TEST(Decimal, TakesStrtodsFormsWithNothingAfter) {
  double v = -1;
  EXPECT_TRUE(parse_decimal("2.5", &v));
  EXPECT_EQ(v, 2.5);
  EXPECT_TRUE(parse_decimal("0", &v));
  EXPECT_EQ(v, 0.0);
  EXPECT_TRUE(parse_decimal("1e3", &v));
  EXPECT_EQ(v, 1000.0);
  EXPECT_TRUE(parse_decimal(".25", &v));
  EXPECT_EQ(v, 0.25);
  for (const char* bad : {"", "x", "2.5s", "2.5 ", " 2.5", "+2.5", "-2.5", "2,5", "1e-400", "1e400", ".", "0x1p4",
                          "0X10", "inf", "nan"}) {
    double w = 42;
    EXPECT_FALSE(parse_decimal(bad, &w)) << "'" << bad << "'";
    EXPECT_EQ(w, 42.0) << "'" << bad << "' changed the value";
  }
  EXPECT_FALSE(parse_decimal(nullptr, &v));
}

TEST(TimeoutSeconds, TakesZeroToABillion) {
  double s = -1;
  EXPECT_TRUE(parse_timeout_seconds("0", &s));
  EXPECT_EQ(s, 0.0);
  EXPECT_TRUE(parse_timeout_seconds("0.5", &s));
  EXPECT_EQ(s, 0.5);
  EXPECT_TRUE(parse_timeout_seconds("1e9", &s));
  EXPECT_EQ(s, 1e9);
  for (const char* bad : {"-1", "1.5e9", "nan", "inf", "1e-400", "5s", ""}) {
    double w = 42;
    EXPECT_FALSE(parse_timeout_seconds(bad, &w)) << "'" << bad << "'";
    EXPECT_EQ(w, 42.0);
  }
}

/// Sets the process's locale to a German one (decimal comma) built in a temporary folder, and
/// back to "C" at the end. Skips where localedef or the locale's sources are missing.
class DecimalCommaLocale : public ::testing::Test {
 protected:
  void SetUp() override {
    char folder[] = "/tmp/rfa_locale_XXXXXX";
    ASSERT_NE(mkdtemp(folder), nullptr);
    folder_ = folder;
    const std::string build = "localedef -i de_DE -f UTF-8 '" + folder_ + "/de_DE.UTF-8' >/dev/null 2>&1";
    if (std::system(build.c_str()) != 0) GTEST_SKIP() << "localedef cannot build de_DE.UTF-8 here";
    setenv("LOCPATH", folder_.c_str(), 1);
    if (setlocale(LC_ALL, "de_DE.UTF-8") == nullptr) GTEST_SKIP() << "the locale built does not load";
    // The premise: in this locale the C library's own reader stops at the point.
    char* end = nullptr;
    ASSERT_EQ(std::strtod("0.5", &end), 0.0);
    ASSERT_EQ(std::string(end), ".5");
  }
  void TearDown() override {
    setlocale(LC_ALL, "C");
    unsetenv("LOCPATH");
    if (!folder_.empty()) std::system(("rm -rf '" + folder_ + "'").c_str());
  }
  std::string folder_;
};

TEST_F(DecimalCommaLocale, DecimalsAreReadInTheCLocale) {
  double v = -1;
  EXPECT_TRUE(parse_decimal("0.5", &v)) << "a decimal point refused under a decimal comma locale";
  EXPECT_EQ(v, 0.5);
  EXPECT_FALSE(parse_decimal("0,5", &v)) << "the locale's decimal comma taken";
  double s = -1;
  EXPECT_TRUE(parse_timeout_seconds("2.5", &s));
  EXPECT_EQ(s, 2.5);
}

}  // namespace
}  // namespace rfa
