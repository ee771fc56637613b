// SPDX-License-Identifier: BSD-3-Clause
// rfa_options_t's struct_size, as callers compiled against other headers set it: an older,
// smaller struct is read and written only up to its size (fields past it take their defaults,
// whatever the bytes there hold); a newer, larger one has its unknown tail ignored; a size that
// ends inside a field is refused by rfa_options_init_sized, rfa_context_create and
// rfa_context_get_options alike, on every rank, before any byte of a half field is read.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "capi_test_support.hpp"
#include "rfa/rfa_mpi.h"

namespace {

using namespace rfa_capi_test;

// The struct as a caller compiled before value_head_dim was appended sees it.
constexpr std::size_t kOlderSize = offsetof(rfa_options_t, value_head_dim);
static_assert(kOlderSize % 8 == 0, "an older struct ends on a whole field");
constexpr unsigned char kSentinel = 0xA5;

// A struct and bytes past it, as a caller compiled against a newer header holds it.
struct NewerOptions {
  rfa_options_t known;
  int64_t appended[2];
};

TEST(CapiOptionsStructSize, OlderStructInitWritesOnlyItsBytes) {
  rfa_options_t o;
  std::memset(&o, kSentinel, sizeof o);
  ASSERT_RFA_OK(rfa_options_init_sized(&o, kOlderSize));
  EXPECT_EQ(o.struct_size, kOlderSize);
  EXPECT_EQ(o.version, RFA_OPTIONS_VERSION);
  const auto* bytes = reinterpret_cast<const unsigned char*>(&o);
  for (std::size_t i = kOlderSize; i < sizeof o; ++i) ASSERT_EQ(bytes[i], kSentinel) << "byte " << i << " written";
}

TEST(CapiOptionsStructSize, OlderStructCreatesWithDefaultsPastItsEnd) {
  rfa_options_t o = small_problem(RFA_LAYOUT_CONTIGUOUS, 4);
  o.struct_size = kOlderSize;
  o.value_head_dim = 999;  // past the caller's struct: not the caller's, so not read
  rfa_context_t ctx = nullptr;
  ASSERT_RFA_OK(rfa_context_create(MPI_COMM_WORLD, &o, &ctx));
  rfa_options_t kept;
  std::memset(&kept, kSentinel, sizeof kept);
  kept.struct_size = sizeof kept;
  ASSERT_RFA_OK(rfa_context_get_options(ctx, &kept));
  EXPECT_EQ(kept.value_head_dim, 0) << "the field past the caller's struct took its default";
  EXPECT_EQ(kept.head_dim, o.head_dim);

  rfa_options_t older;
  std::memset(&older, kSentinel, sizeof older);
  older.struct_size = kOlderSize;
  ASSERT_RFA_OK(rfa_context_get_options(ctx, &older));
  EXPECT_EQ(older.struct_size, kOlderSize);
  EXPECT_EQ(older.seq_total, o.seq_total);
  const auto* bytes = reinterpret_cast<const unsigned char*>(&older);
  for (std::size_t i = kOlderSize; i < sizeof older; ++i) ASSERT_EQ(bytes[i], kSentinel) << "byte " << i << " written";
  ASSERT_RFA_OK(rfa_context_destroy(ctx));
}

TEST(CapiOptionsStructSize, NewerStructIgnoresItsUnknownTail) {
  NewerOptions n;
  std::memset(&n, kSentinel, sizeof n);
  n.known = small_problem(RFA_LAYOUT_CONTIGUOUS, 4);
  n.known.struct_size = sizeof n;
  rfa_context_t ctx = nullptr;
  ASSERT_RFA_OK(rfa_context_create(MPI_COMM_WORLD, &n.known, &ctx));
  std::memset(n.appended, kSentinel, sizeof n.appended);
  ASSERT_RFA_OK(rfa_context_get_options(ctx, &n.known));
  EXPECT_EQ(n.known.struct_size, sizeof(rfa_options_t)) << "the size written is the library's own";
  const auto* tail = reinterpret_cast<const unsigned char*>(n.appended);
  for (std::size_t i = 0; i < sizeof n.appended; ++i) ASSERT_EQ(tail[i], kSentinel) << "tail byte " << i << " written";
  ASSERT_RFA_OK(rfa_context_destroy(ctx));
}

// Sizes that end 1, 4 and 7 bytes into a field, around the document and mask lists (whose
// counts and pointers a half-read would turn into reads far past the caller's arrays).
std::vector<std::size_t> sizes_inside_a_field() {
  std::vector<std::size_t> sizes;
  for (std::size_t field : {offsetof(rfa_options_t, head_dim), offsetof(rfa_options_t, doc_boundaries),
                            offsetof(rfa_options_t, doc_boundary_count), offsetof(rfa_options_t, mask_range_count),
                            offsetof(rfa_options_t, value_head_dim)}) {
    for (std::size_t into : {1, 4, 7}) sizes.push_back(field + into);
  }
  return sizes;
}

TEST(CapiOptionsStructSize, InitRefusesASizeInsideAField) {
  for (std::size_t size : sizes_inside_a_field()) {
    if (size < offsetof(rfa_options_t, head_dim) + 8) continue;  // refused as too small
    SCOPED_TRACE(size);
    rfa_options_t o;
    std::memset(&o, kSentinel, sizeof o);
    EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_options_init_sized(&o, size), "struct_size is",
                     "not a multiple of 8", "ends inside a field");
    const auto* bytes = reinterpret_cast<const unsigned char*>(&o);
    for (std::size_t i = 0; i < sizeof o; ++i) ASSERT_EQ(bytes[i], kSentinel) << "byte " << i << " written";
  }
}

TEST(CapiOptionsStructSize, CreateRefusesASizeInsideAFieldOnEveryRank) {
  static int64_t bounds[2] = {0, 0};
  for (std::size_t size : sizes_inside_a_field()) {
    SCOPED_TRACE(size);
    rfa_options_t o = small_problem(RFA_LAYOUT_CONTIGUOUS, 4);
    // Counts of -1 whose first bytes alone would read as 255.
    o.doc_boundaries = bounds;
    o.doc_boundary_count = -1;
    o.mask_range_count = -1;
    o.struct_size = size;
    rfa_context_t ctx = nullptr;
    EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_context_create(MPI_COMM_WORLD, &o, &ctx), "struct_size is");
    EXPECT_EQ(ctx, nullptr);
  }
}

TEST(CapiOptionsStructSize, GetOptionsRefusesASizeInsideAField) {
  rfa_options_t o = small_problem(RFA_LAYOUT_CONTIGUOUS, 4);
  rfa_context_t ctx = nullptr;
  ASSERT_RFA_OK(rfa_context_create(MPI_COMM_WORLD, &o, &ctx));
  for (std::size_t size : sizes_inside_a_field()) {
    if (size < offsetof(rfa_options_t, head_dim) + 8) continue;
    SCOPED_TRACE(size);
    rfa_options_t got;
    std::memset(&got, kSentinel, sizeof got);
    got.struct_size = size;
    EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_context_get_options(ctx, &got), "not a multiple of 8");
    EXPECT_EQ(got.struct_size, size) << "nothing written";
  }
  ASSERT_RFA_OK(rfa_context_destroy(ctx));
}

}  // namespace
