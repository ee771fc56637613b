// SPDX-License-Identifier: BSD-3-Clause
// rfa_options_t's struct_size, as callers compiled against other headers set it: an older,
// smaller struct is read and written only up to its size (fields past it take their defaults,
// whatever the bytes there hold); a newer, larger one has its unknown tail zeroed by
// rfa_options_init_sized and rfa_context_get_options, and refused by rfa_context_create where a
// byte of it is set; a size that ends inside a field, or that no version reaches, is refused by
// all three alike, on every rank, before any byte of a half field is read.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
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

TEST(CapiOptionsStructSize, NewerStructInitZeroesItsUnknownTailAndCreates) {
  NewerOptions n;
  std::memset(&n, kSentinel, sizeof n);
  ASSERT_RFA_OK(rfa_options_init_sized(&n.known, sizeof n));
  EXPECT_EQ(n.known.struct_size, sizeof n) << "the caller's size is kept";
  EXPECT_EQ(n.appended[0], 0) << "the fields this library lacks are zeroed, asking for nothing new";
  EXPECT_EQ(n.appended[1], 0);
  const rfa_options_t problem = small_problem(RFA_LAYOUT_CONTIGUOUS, 4);
  std::memcpy(&n.known, &problem, sizeof problem);
  n.known.struct_size = sizeof n;
  rfa_context_t ctx = nullptr;
  ASSERT_RFA_OK(rfa_context_create(MPI_COMM_WORLD, &n.known, &ctx));
  std::memset(n.appended, kSentinel, sizeof n.appended);
  ASSERT_RFA_OK(rfa_context_get_options(ctx, &n.known));
  EXPECT_EQ(n.known.struct_size, sizeof n) << "the caller's size is kept";
  EXPECT_EQ(n.known.seq_total, problem.seq_total);
  EXPECT_EQ(n.appended[0], 0) << "the tail is written as zeros, so the options can create again";
  EXPECT_EQ(n.appended[1], 0);
  rfa_context_t again = nullptr;
  ASSERT_RFA_OK(rfa_context_create(MPI_COMM_WORLD, &n.known, &again));
  ASSERT_RFA_OK(rfa_context_destroy(again));
  ASSERT_RFA_OK(rfa_context_destroy(ctx));
}

// A field a newer header appends, set, would be silently ignored by this library: refused on
// the rank that set it, which every rank then reports, before the ranks agree.
TEST(CapiOptionsStructSize, NewerStructWithAFieldThisLibraryLacksIsRefusedOnEveryRank) {
  NewerOptions n;
  ASSERT_RFA_OK(rfa_options_init_sized(&n.known, sizeof n));
  const rfa_options_t problem = small_problem(RFA_LAYOUT_CONTIGUOUS, 4);
  std::memcpy(&n.known, &problem, sizeof problem);
  n.known.struct_size = sizeof n;
  n.appended[1] = 1;
  const std::string byte = "sets a field at byte " + std::to_string(sizeof(rfa_options_t) + sizeof(int64_t));
  rfa_context_t ctx = nullptr;
  EXPECT_RFA_FAILS(RFA_ERROR_UNSUPPORTED, rfa_context_create(MPI_COMM_WORLD, &n.known, &ctx), byte.c_str(),
                   "compiled against a newer rfa.h");
  EXPECT_EQ(ctx, nullptr);
  if (world_size() < 2) return;
  n.appended[1] = world_rank() == 1 ? 1 : 0;
  EXPECT_RFA_FAILS(RFA_ERROR_UNSUPPORTED, rfa_context_create(MPI_COMM_WORLD, &n.known, &ctx),
                   world_rank() == 1 ? byte.c_str() : "rank(s) 1");
  EXPECT_EQ(ctx, nullptr);
}

TEST(CapiOptionsStructSize, SizesNoVersionReachesAreRefused) {
  rfa_options_t o;
  std::memset(&o, kSentinel, sizeof o);
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_options_init_sized(&o, 4104), "struct_size is 4104",
                   "more than 4096");
  const auto* bytes = reinterpret_cast<const unsigned char*>(&o);
  for (std::size_t i = 0; i < sizeof o; ++i) ASSERT_EQ(bytes[i], kSentinel) << "byte " << i << " written";
  rfa_options_t p = small_problem(RFA_LAYOUT_CONTIGUOUS, 4);
  p.struct_size = SIZE_MAX - 7;  // a multiple of 8, read past any struct were it taken
  rfa_context_t ctx = nullptr;
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_context_create(MPI_COMM_WORLD, &p, &ctx), "more than 4096");
  EXPECT_EQ(ctx, nullptr);
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
