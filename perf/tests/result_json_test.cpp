// SPDX-License-Identifier: BSD-3-Clause
// perf/common/result_json.hpp: numbers written so that they read back exactly (byte counts past
// 1e9 and fractions alike), inf and nan as null, and a results file that holds them.
#include "result_json.hpp"

#include <gtest/gtest.h>

#include <unistd.h>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>

namespace {

using rfa::perf::json_number;

double read_back(const std::string& text) { return std::strtod(text.c_str(), nullptr); }

TEST(JsonNumber, WholeFiguresKeepEveryDigit) {
  // 9 significant digits would print these as 1.23456789e+10 and 9.00719925e+15.
  EXPECT_EQ(json_number(12345678901.0), "12345678901");
  EXPECT_EQ(json_number(9007199254740992.0), "9007199254740992");  // 2^53
  EXPECT_EQ(json_number(0.0), "0");
  EXPECT_EQ(json_number(-3.0), "-3");
}

TEST(JsonNumber, FractionsReadBackExactly) {
  for (const double v : {0.1, 1.0 / 3.0, 2.0 / 3.0 * 1e-300, 6.02214076e23, std::numeric_limits<double>::max(),
                         std::numeric_limits<double>::denorm_min(), -1.0 / 7.0}) {
    const std::string text = json_number(v);
    EXPECT_EQ(read_back(text), v) << text;
  }
  EXPECT_EQ(json_number(0.1), "0.1");  // the shortest such text, not 0.10000000000000001
}

TEST(JsonNumber, InfAndNanAreNull) {
  EXPECT_EQ(json_number(std::numeric_limits<double>::infinity()), "null");
  EXPECT_EQ(json_number(-std::numeric_limits<double>::infinity()), "null");
  EXPECT_EQ(json_number(std::nan("")), "null");
}

TEST(ResultsJson, CountersAndTimesAreWrittenExactly) {
  char path[] = "/tmp/rfa_result_json_testXXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  rfa::perf::BenchCase c;
  c.name = "ring/fwd/zigzag";
  c.counters = {{"bytes_moved", 68719476737.0}};  // 2^36 + 1
  c.repetitions.push_back({1.0 / 3.0, {{"tflops", 123.456789012345}}});
  rfa::perf::write_results_json(path, {{"host", "test"}}, {c});
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::remove(path);
  EXPECT_NE(text.str().find("\"bytes_moved\": 68719476737,"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("\"tflops\": 123.456789012345\n"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("\"real_time\": " + json_number(1e3 / 3.0) + ","), std::string::npos) << text.str();
}

}  // namespace
