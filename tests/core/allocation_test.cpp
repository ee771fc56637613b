// SPDX-License-Identifier: BSD-3-Clause
// Engine buffers of 2^32 elements and more, refused allocations, and shapes a View cannot
// index (core/allocation.hpp, core/view_limits.hpp, engine/workspace.hpp).
#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>
#include <cstdint>
#include <string>

#include "core/allocation.hpp"
#include "core/error.hpp"
#include "core/view_limits.hpp"
#include "engine/workspace.hpp"
#include "kernels/contiguous_ops.hpp"
#include "unbacked_memory.hpp"

namespace {

using rfa::engine::Workspace;
constexpr std::int64_t k2to32 = std::int64_t(1) << 32;

// The error `body` throws, or a failure when it throws none.
template <class Body>
rfa::Error error_of(Body&& body) {
  try {
    body();
  } catch (const rfa::Error& e) {
    return e;
  }
  ADD_FAILURE() << "no rfa::Error was thrown";
  return rfa::Error(RFA_SUCCESS, "");
}

TEST(Allocation, DescribesBytesExactlyAndRounded) {
  EXPECT_EQ(rfa::describe_bytes(512), "512 bytes");
  EXPECT_EQ(rfa::describe_bytes(8589934592LL), "8589934592 bytes (8.0 GiB)");
  EXPECT_EQ(rfa::describe_bytes(3LL << 39), "1649267441664 bytes (1.5 TiB)");
}

TEST(Allocation, CheckedBytesRejectsOverflowAndNegativeExtents) {
  EXPECT_EQ(rfa::checked_bytes("x", 2, 1 << 20, 1 << 10, 8, 64), std::int64_t(1) << 40);
  const rfa::Error overflow = error_of([] { rfa::checked_bytes("big", 4, 1LL << 31, 1LL << 31, 1LL << 2, 2); });
  EXPECT_EQ(overflow.code(), RFA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(overflow.what()).find("'big'"), std::string::npos) << overflow.what();
  EXPECT_EQ(error_of([] { rfa::checked_bytes("neg", 4, 3, -1); }).code(), RFA_ERROR_INVALID_ARGUMENT);
}

// A rank-4 tensor of exactly 2^32 one-byte elements: Kokkos 3.4 would allocate it with 0 bytes
// (its element count is computed in 32 bits). The workspace's must reach its last byte, or,
// where Views compute offsets in the indices' type (Kokkos 5), be refused.
TEST(Allocation, WorkspaceTensorOfExactly2To32ElementsIsWhole) {
  Workspace<> ws;
  auto t = ws.tensor4<std::uint8_t>("rfa::whole", 1 << 10, 1 << 10, 1 << 6, 1 << 6);
  if (rfa::view_offsets_in_index_type()) {
    EXPECT_EQ(t.data(), nullptr);
    EXPECT_EQ(error_of([&] { ws.throw_if_failed(); }).code(), RFA_ERROR_UNSUPPORTED);
    return;
  }
  ASSERT_NO_THROW(ws.throw_if_failed());
  ASSERT_NE(t.data(), nullptr);
  EXPECT_EQ(ws.bytes(), k2to32);
  EXPECT_EQ(std::int64_t(t.size()), k2to32);
  std::uint8_t& last = t((1 << 10) - 1, (1 << 10) - 1, (1 << 6) - 1, (1 << 6) - 1);
  EXPECT_EQ(&last - t.data(), k2to32 - 1);
  t(0, 0, 0, 0) = 7;
  last = 9;  // past the end (a segfault, or ASan's report) if the buffer were short
  EXPECT_EQ(t.data()[k2to32 - 1], 9);
}

// Where Views hold fewer than 2^31 elements (Kokkos 5), the shapes below are refused before any
// allocation, and a smaller allocation is not sure to be refused.
constexpr const char* kViewsTooSmallToAsk = "this build's Views hold fewer than 2^31 elements: no refused allocation";

TEST(Allocation, RefusedAllocationIsDeferredThenRaisedWithLabelAndBytes) {
  if (rfa::test::overcommit_always()) GTEST_SKIP() << "vm.overcommit_memory = 1 grants any allocation";
  if (rfa::view_offsets_in_index_type()) GTEST_SKIP() << kViewsTooSmallToAsk;
  Workspace<> ws;
  auto small = ws.tensor3<float>("rfa::small", 2, 3, 4);
  EXPECT_NE(small.data(), nullptr);
  // 2^40 floats = 4 TiB: no test machine grants it.
  auto huge = ws.tensor4<float>("rfa::huge", 1 << 20, 1 << 10, 1 << 6, 1 << 4);
  EXPECT_EQ(huge.data(), nullptr);
  auto after = ws.tensor3<float>("rfa::after", 2, 3, 4);  // not attempted once one has failed
  EXPECT_EQ(after.data(), nullptr);
  const rfa::Error e = error_of([&] { ws.throw_if_failed(); });
  EXPECT_EQ(e.code(), RFA_ERROR_OUT_OF_MEMORY);
  const std::string m = e.what();
  EXPECT_NE(m.find("cannot allocate 4398046511104 bytes (4.0 TiB) for 'rfa::huge'"), std::string::npos) << m;
  EXPECT_NE(m.find("4398046511296 bytes"), std::string::npos) << m;  // all three buffers, the total
}

TEST(Allocation, AllocateTensorThrowsOutOfMemoryAtOnce) {
  if (rfa::test::overcommit_always()) GTEST_SKIP() << "vm.overcommit_memory = 1 grants any allocation";
  if (rfa::view_offsets_in_index_type()) GTEST_SKIP() << kViewsTooSmallToAsk;
  using Big = Kokkos::View<float***, Kokkos::LayoutRight, Kokkos::HostSpace>;
  const rfa::Error e = error_of([] { rfa::allocate_tensor<Big>("rfa::big", 1 << 20, 1 << 10, 1 << 10); });
  EXPECT_EQ(e.code(), RFA_ERROR_OUT_OF_MEMORY);
  EXPECT_NE(std::string(e.what()).find("'rfa::big'"), std::string::npos) << e.what();
}

TEST(ViewLimits, AcceptsShapesPast2To32ElementsAndRejectsExtentsPast2To32) {
  EXPECT_NO_THROW(rfa::require_view_extents("q", {1, (1 << 25) - 1, 1 << 4, 1 << 2}));  // 2^31 - 64 elements
  if (rfa::view_offsets_in_index_type()) {
    // Offsets in the indices' type: 2^31 elements and more are refused, naming the reason.
    const rfa::Error big = error_of([] { rfa::require_view_extents("q", {1, 1 << 25, 1 << 4, 1 << 2}); });
    EXPECT_EQ(big.code(), RFA_ERROR_UNSUPPORTED);
    EXPECT_NE(std::string(big.what()).find("holds 2^31 elements or more"), std::string::npos) << big.what();
    EXPECT_EQ(error_of([] {
                rfa::require_view_extents("q", {1 << 20, 1 << 6, 1 << 4, 1 << 6});
              }).code(),
              RFA_ERROR_UNSUPPORTED);
  } else {
    EXPECT_NO_THROW(rfa::require_view_extents("q", {1 << 20, 1 << 6, 1 << 4, 1 << 6}));  // 2^36 elements
    EXPECT_NO_THROW(rfa::require_view_extents("q", {1, (1LL << 32) - 1, 1, 1}));
  }
  const rfa::Error e = error_of([] { rfa::require_view_extents("q", {1, k2to32, 1, 64}); });
  EXPECT_EQ(e.code(), RFA_ERROR_UNSUPPORTED);
  EXPECT_NE(std::string(e.what()).find("tensor 'q' of shape [1,4294967296,1,64]"), std::string::npos) << e.what();
  EXPECT_EQ(error_of([] { rfa::require_view_extents("lse", {1, 2, k2to32 + 5}); }).code(), RFA_ERROR_UNSUPPORTED);
}

TEST(ViewLimits, WorkspaceRecordsAnUnindexableShape) {
  Workspace<> ws;
  auto t = ws.tensor3<float>("rfa::long", 1, 1, k2to32);
  EXPECT_EQ(t.data(), nullptr);
  EXPECT_EQ(error_of([&] { ws.throw_if_failed(); }).code(), RFA_ERROR_UNSUPPORTED);
}

TEST(ContiguousOps, FillAndCopyEveryElement) {
  Kokkos::View<float****, Kokkos::LayoutRight, Kokkos::HostSpace> a("a", 2, 3, 5, 7), b("b", 2, 3, 5, 7);
  rfa::kernels::fill_elements(a, 1.5f);
  for (std::size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a.data()[i], 1.5f) << i;
  a(1, 2, 4, 6) = -3.0f;
  rfa::kernels::copy_elements(b, a);
  EXPECT_EQ(b(1, 2, 4, 6), -3.0f);
  EXPECT_EQ(b(0, 0, 0, 0), 1.5f);
  Kokkos::View<float****, Kokkos::LayoutRight, Kokkos::HostSpace> c("c", 2, 3, 5, 6);
  EXPECT_EQ(error_of([&] { rfa::kernels::copy_elements(c, a); }).code(), RFA_ERROR_INTERNAL);
}

}  // namespace
