// SPDX-License-Identifier: BSD-3-Clause
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdio>
#include <functional>
#include <string>

#include "core/error.hpp"
#include "core/text_file.hpp"
#include "topology/order_policy.hpp"

namespace rfa::topology {
namespace {

void expect_invalid(const std::function<void()>& call, const std::string& expected_text) {
  try {
    call();
    ADD_FAILURE() << "no error; expected one mentioning '" << expected_text << "'";
  } catch (const rfa::Error& e) {
    EXPECT_EQ(e.code(), RFA_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find(expected_text), std::string::npos) << e.what();
  }
}

TEST(OrderPolicy, DefaultFollowsTheEnvironment) {
  EXPECT_EQ(resolve_policy(RFA_RING_ORDER_DEFAULT, "").policy, RFA_RING_ORDER_TOPOLOGY);
  EXPECT_EQ(resolve_policy(RFA_RING_ORDER_DEFAULT, "topo").policy, RFA_RING_ORDER_TOPOLOGY);
  EXPECT_EQ(resolve_policy(RFA_RING_ORDER_DEFAULT, "topology").policy, RFA_RING_ORDER_TOPOLOGY);  // the dump's name
  EXPECT_EQ(resolve_policy(RFA_RING_ORDER_DEFAULT, "identity").policy, RFA_RING_ORDER_IDENTITY);
  const PolicyChoice file = resolve_policy(RFA_RING_ORDER_DEFAULT, "file:/tmp/ring.txt");
  EXPECT_EQ(file.policy, RFA_RING_ORDER_FILE);
  EXPECT_EQ(file.file, "/tmp/ring.txt");
}

TEST(OrderPolicy, ExplicitPoliciesIgnoreTheEnvironment) {
  EXPECT_EQ(resolve_policy(RFA_RING_ORDER_IDENTITY, "topo").policy, RFA_RING_ORDER_IDENTITY);
  EXPECT_EQ(resolve_policy(RFA_RING_ORDER_TOPOLOGY, "identity").policy, RFA_RING_ORDER_TOPOLOGY);
  EXPECT_EQ(resolve_policy(RFA_RING_ORDER_TOPOLOGY, "garbage").policy, RFA_RING_ORDER_TOPOLOGY);
  EXPECT_EQ(resolve_policy(RFA_RING_ORDER_FILE, "file:/a").file, "/a");
  EXPECT_EQ(resolve_policy(RFA_RING_ORDER_FILE, "file:/a", "/b").file, "/b");  // explicit path wins
}

TEST(OrderPolicy, BadValuesAreClearErrors) {
  expect_invalid([] { resolve_policy(RFA_RING_ORDER_DEFAULT, "topology-ish"); }, "topology-ish");
  expect_invalid([] { resolve_policy(RFA_RING_ORDER_DEFAULT, "Identity"); }, "identity, topo (or topology), file:PATH");
  expect_invalid([] { resolve_policy(RFA_RING_ORDER_DEFAULT, "file:"); }, "file:PATH");
  expect_invalid([] { resolve_policy(RFA_RING_ORDER_FILE, ""); }, "needs a path");
  expect_invalid([] { resolve_policy(RFA_RING_ORDER_FILE, "identity"); }, "needs a path");
  expect_invalid([] { resolve_policy(static_cast<rfa_ring_order_t>(42), ""); }, "42");
}

TEST(OrderPolicy, OrderTextIsAPermutation) {
  EXPECT_EQ(parse_order_text("2\n0\n1\n", 3, "f"), (std::vector<int>{2, 0, 1}));
  EXPECT_EQ(parse_order_text("# ring for job 7\n 1 \n\n0  # head\n", 2, "f"), (std::vector<int>{1, 0}));
  EXPECT_EQ(parse_order_text("0", 1, "f"), (std::vector<int>{0}));  // no final newline
  // Written on another system or by hand: CRLF line ends and tabs around a rank.
  EXPECT_EQ(parse_order_text("1\r\n\t0\t# head\r\n", 2, "f"), (std::vector<int>{1, 0}));
}

TEST(OrderPolicy, BadOrderTextNamesFileAndLine) {
  expect_invalid([] { parse_order_text("0\n1\n1\n", 3, "ring.txt"); }, "ring.txt:3: rank 1 already listed on line 2");
  expect_invalid([] { parse_order_text("0\n1\n", 3, "ring.txt"); }, "lists 2 ranks; the communicator has 3");
  expect_invalid([] { parse_order_text("0\n1\n2\n3\n", 3, "ring.txt"); }, "ring.txt:4: rank 3 is outside 0..2");
  expect_invalid([] { parse_order_text("0\n-1\n", 2, "ring.txt"); }, "ring.txt:2: rank -1");
  expect_invalid([] { parse_order_text("0\none\n", 2, "ring.txt"); }, "ring.txt:2: 'one' is not a rank");
  expect_invalid([] { parse_order_text("0 1\n", 2, "ring.txt"); }, "'0 1' is not a rank");
  expect_invalid([] { parse_order_text("", 1, "ring.txt"); }, "lists 0 ranks");
  // Bytes a message cannot show as they are: escaped (a NUL would end the message there).
  expect_invalid([] { parse_order_text(std::string("0\n1\0002\f\n", 7), 2, "ring.txt"); },
                 "ring.txt:2: '1\\x002\\x0c' is not a rank");
  // A byte order mark: said so, not taken for a bad first rank.
  expect_invalid(
      [] {
        parse_order_text(
            "\xef\xbb\xbf"
            "0\n1\n",
            2, "ring.txt");
      },
      "UTF-8 byte order mark");
  expect_invalid(
      [] {
        parse_order_text(std::string("\xff\xfe"
                                     "0\0\n\0",
                                     6),
                         1, "ring.txt");
      },
      "UTF-16 byte order mark");
}

TEST(OrderPolicy, UnreadableFileIsAnError) {
  expect_invalid([] { order_file_text("/nonexistent/rfa-ring-order.txt"); }, "/nonexistent/rfa-ring-order.txt");
  expect_invalid([] { order_file_text(::testing::TempDir()); }, "is a directory");
  const std::string path = ::testing::TempDir() + "rfa_order_policy_test.txt";
  std::FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("1\n0\n", f);
  std::fclose(f);
  EXPECT_EQ(order_file_text(path), "1\n0\n");
  std::remove(path.c_str());
}

// A path that is no file cannot stall the rank that reads it: a FIFO nobody writes reads as
// empty at once (then refused as an order of no ranks), where opening it waited for a writer for
// good; a file longer than the reader allows is refused, not read whole.
TEST(TextFile, AFifoWithoutAWriterReadsAsEmptyAtOnce) {
  const std::string fifo = ::testing::TempDir() + "rfa_text_file_test.fifo";
  std::remove(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(read_text_file(fifo, 1024, "the test's file"), "");
  expect_invalid([&] { parse_order_text(order_file_text(fifo), 2, fifo); }, "lists 0 ranks");
  // Written: nobody reads it, so the write is refused rather than waited for.
  expect_invalid([&] { write_text_file(fifo, "{}\n", "the test's dump"); }, "the test's dump: cannot write");
  std::remove(fifo.c_str());
}

TEST(TextFile, ALongerFileIsRefusedAndAWrittenOneReadsBack) {
  const std::string path = ::testing::TempDir() + "rfa_text_file_test.txt";
  write_text_file(path, std::string(5000, 'x'), "the test's file");
  EXPECT_EQ(read_text_file(path, 5000, "the test's file").size(), 5000u);
  expect_invalid([&] { read_text_file(path, 4999, "the test's file"); }, "is longer than 4999 bytes");
  write_text_file(path, "1\n0\n", "the test's file");  // truncated, not appended
  EXPECT_EQ(read_text_file(path, 4, "the test's file"), "1\n0\n");
  std::remove(path.c_str());
}

}  // namespace
}  // namespace rfa::topology
