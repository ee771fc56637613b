// SPDX-License-Identifier: BSD-3-Clause
// Helpers shared by the communicator tests: the world's size and rank, recognisable byte
// patterns, and expecting an rfa::Error with a given code.
#pragma once

#include <gtest/gtest.h>
#include <mpi.h>

#include "mpi_test_support.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace rfa::comm::testing {

using rfa::test::world_rank;
using rfa::test::world_size;

/// Byte i of the message that `sender` sends in its exchange number `stream`: different for
/// every sender, stream and (within 64 KiB) offset, so a misrouted block cannot pass.
inline unsigned char pattern_byte(int sender, int stream, std::size_t i) {
  return static_cast<unsigned char>(sender * 67 + stream * 29 + i * 13 + (i >> 8) * 7 + (i >> 16) * 3 + 1);
}
inline std::vector<unsigned char> pattern(int sender, int stream, std::size_t bytes) {
  std::vector<unsigned char> v(bytes);
  for (std::size_t i = 0; i < bytes; ++i) v[i] = pattern_byte(sender, stream, i);
  return v;
}
/// Index of the first byte that differs from the pattern, or bytes if none.
inline std::size_t first_mismatch(const unsigned char* data, int sender, int stream, std::size_t bytes) {
  for (std::size_t i = 0; i < bytes; ++i) {
    if (data[i] != pattern_byte(sender, stream, i)) return i;
  }
  return bytes;
}

/// Runs f, expects an rfa::Error with `code`, returns its message ("" if none was thrown).
template <class F>
std::string expect_error(rfa_result_t code, F&& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "expected rfa::Error with code " << int(code) << ", nothing was thrown";
  return "";
}

}  // namespace rfa::comm::testing
