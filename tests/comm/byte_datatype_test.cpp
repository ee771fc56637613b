// SPDX-License-Identifier: BSD-3-Clause
// The derived datatype that carries byte counts above INT_MAX: its size and extent are exact.
#include "comm/mpi/byte_datatype.hpp"

#include <gtest/gtest.h>

#include "comm_test_support.hpp"

namespace rfa::comm::mpi {
namespace {

void expect_exact(std::size_t bytes, std::size_t max_count) {
  ByteDatatype t(bytes, max_count);
  MPI_Count size = 0, lower = -1, extent = 0;
#if MPI_VERSION >= 4  // the large-count forms; MPI 4.1 deprecates the _x ones
  ASSERT_EQ(MPI_Type_size_c(t.type(), &size), MPI_SUCCESS);
  ASSERT_EQ(MPI_Type_get_extent_c(t.type(), &lower, &extent), MPI_SUCCESS);
#else
  ASSERT_EQ(MPI_Type_size_x(t.type(), &size), MPI_SUCCESS);
  ASSERT_EQ(MPI_Type_get_extent_x(t.type(), &lower, &extent), MPI_SUCCESS);
#endif
  EXPECT_EQ(MPI_Count(t.count()) * size, MPI_Count(bytes)) << bytes << " bytes, max count " << max_count;
  EXPECT_EQ(MPI_Count(t.count()) * extent, MPI_Count(bytes)) << bytes << " bytes, max count " << max_count;
  EXPECT_EQ(lower, 0);
  EXPECT_EQ(t.derived(), bytes > max_count);
}

TEST(ByteDatatype, PlainBytesUpToTheLimit) {
  ByteDatatype small(1000, 1000);
  EXPECT_EQ(small.type(), MPI_BYTE);
  EXPECT_EQ(small.count(), 1000);
  ByteDatatype empty(0);
  EXPECT_EQ(empty.count(), 0);
}

TEST(ByteDatatype, DerivedTypesCoverExactlyTheBytes) {
  expect_exact(1001, 1000);  // one block and a remainder of 1
  expect_exact(3000, 1000);  // whole blocks, no remainder
  expect_exact(12345, 1000);
  const std::size_t int_max = 2147483647;
  expect_exact(int_max + std::size_t(1), int_max);        // just past the real limit
  expect_exact((std::size_t(5) << 32) + 12345, int_max);  // ~20 GiB: only described, never sent
}

TEST(ByteDatatype, RejectsABadLimit) {
  testing::expect_error(RFA_ERROR_INVALID_ARGUMENT, [] { ByteDatatype t(10, 0); });
}

}  // namespace
}  // namespace rfa::comm::mpi
