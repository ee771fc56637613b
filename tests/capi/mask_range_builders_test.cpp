// SPDX-License-Identifier: BSD-3-Clause
// The builders of common masks as ranges (rfa.h, "Masks as ranges"), pair by pair against each
// mask's own definition written here, on sizes around their edges (windows of 1 and of the
// whole sequence, empty documents, blocks that do and do not divide the sequence, radius 0 and
// radii beyond the grid, 1-point extents); the count-then-fill protocol and bad arguments.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <new>
#include <string>
#include <vector>

#include "capi_test_support.hpp"
#include "random_mask_ranges.hpp"
#include "rfa/rfa.h"

// Bytes asked of operator new while `counting` is set (this program's replacement, which the
// library's allocations reach too): a count-only query must not build the list it counts.
namespace {
std::atomic<bool> counting{false};
std::atomic<std::size_t> counted_bytes{0};
}  // namespace

void* operator new(std::size_t bytes) {
  if (counting.load()) counted_bytes += bytes;
  if (void* p = std::malloc(bytes ? bytes : 1)) return p;
  throw std::bad_alloc();
}
// Not inlined: the compiler would otherwise see free() given what operator new returned.
__attribute__((noinline)) void operator delete(void* p) noexcept { std::free(p); }
__attribute__((noinline)) void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace {

using Builder = std::function<rfa_result_t(rfa_mask_range_t*, int64_t, int64_t*)>;

std::vector<rfa_mask_range_t> build(const Builder& b) {
  int64_t n = -1;
  EXPECT_EQ(b(nullptr, 0, &n), RFA_SUCCESS) << rfa_get_last_error_message();
  std::vector<rfa_mask_range_t> list(std::size_t(n > 0 ? n : 0));
  int64_t again = -1;
  EXPECT_EQ(b(list.data(), n, &again), RFA_SUCCESS) << rfa_get_last_error_message();
  EXPECT_EQ(again, n);
  return list;
}

void expect_pairs(const std::vector<rfa_mask_range_t>& list, int64_t S,
                  const std::function<bool(int64_t, int64_t)>& want, const std::string& what) {
  for (int64_t q = 0; q < S; ++q)
    for (int64_t k = 0; k < S; ++k)
      ASSERT_EQ(rfa_test::ranges_let_through(list, q, k), want(q, k)) << what << ": query " << q << ", key " << k;
}

TEST(MaskRangeBuilders, CausalAndSlidingWindow) {
  for (int64_t S : {1, 2, 7, 16}) {
    expect_pairs(
        build([&](rfa_mask_range_t* r, int64_t c, int64_t* n) { return rfa_mask_ranges_causal(S, r, c, n); }), S,
        [](int64_t q, int64_t k) { return k <= q; }, "causal S=" + std::to_string(S));
    for (int64_t w : {int64_t(1), int64_t(2), S - 1, S, S + 3, std::numeric_limits<int64_t>::max()})
      for (int32_t causal : {0, 1}) {
        if (w < 1) continue;
        const auto list = build([&](rfa_mask_range_t* r, int64_t c, int64_t* n) {
          return rfa_mask_ranges_sliding_window(S, w, causal, r, c, n);
        });
        expect_pairs(
            list, S, [&](int64_t q, int64_t k) { return q - k < w && (!causal || k <= q); },
            "window " + std::to_string(w) + " causal " + std::to_string(causal));
        // Offsets a context takes whatever the window (it refuses those beyond +-2^61).
        ASSERT_EQ(list.size(), 1u);
        EXPECT_GE(list[0].band_lo, 1 - S) << "window " << w;
      }
  }
}

TEST(MaskRangeBuilders, Documents) {
  const std::vector<std::vector<int64_t>> sets = {{0, 9}, {0, 3, 3, 9}, {0, 1, 2, 8, 9}, {0, 0, 9}};
  for (const auto& b : sets)
    for (int32_t causal : {0, 1}) {
      const auto list = build([&](rfa_mask_range_t* r, int64_t c, int64_t* n) {
        return rfa_mask_ranges_documents(b.data(), int64_t(b.size()), causal, r, c, n);
      });
      auto doc = [&](int64_t p) {
        int64_t d = 0;
        for (std::size_t i = 1; i + 1 < b.size(); ++i)
          if (b[i] <= p) d = int64_t(i);
        return d;
      };
      expect_pairs(
          list, 9, [&](int64_t q, int64_t k) { return doc(q) == doc(k) && (!causal || k <= q); },
          "documents " + std::to_string(b.size() - 1));
    }
}

TEST(MaskRangeBuilders, PrefixLmAndBlockCausal) {
  for (int64_t S : {1, 5, 12})
    for (int64_t prefix = 0; prefix <= S; ++prefix) {
      const auto list = build(
          [&](rfa_mask_range_t* r, int64_t c, int64_t* n) { return rfa_mask_ranges_prefix_lm(S, prefix, r, c, n); });
      expect_pairs(
          list, S, [&](int64_t q, int64_t k) { return k < prefix || k <= q; }, "prefix " + std::to_string(prefix));
    }
  for (int64_t S : {1, 7, 12})
    for (int64_t block : {int64_t(1), int64_t(3), int64_t(4), S, S + 2}) {
      const auto list = build(
          [&](rfa_mask_range_t* r, int64_t c, int64_t* n) { return rfa_mask_ranges_block_causal(S, block, r, c, n); });
      EXPECT_EQ(int64_t(list.size()), (S + block - 1) / block);
      expect_pairs(
          list, S, [&](int64_t q, int64_t k) { return k / block <= q / block; }, "block " + std::to_string(block));
    }
}

TEST(MaskRangeBuilders, GridNeighbourhoods) {
  const struct { int64_t nx, ny, nz; } grids[] = {{5, 4, 1}, {1, 6, 1}, {6, 1, 1}, {3, 3, 3}, {4, 2, 3}, {1, 1, 1}};
  for (const auto& g : grids)
    // Radii beyond the grid up to the largest (whose band offsets a context would refuse
    // past +-2^61): the entries' offsets stay within a grid row.
    for (int64_t radius :
         {int64_t(0), int64_t(1), int64_t(2), int64_t(7), int64_t(1) << 61, std::numeric_limits<int64_t>::max()}) {
      const auto list = build([&](rfa_mask_range_t* r, int64_t c, int64_t* n) {
        return rfa_mask_ranges_grid_neighbourhood(g.nx, g.ny, g.nz, radius, r, c, n);
      });
      for (const rfa_mask_range_t& e : list)
        EXPECT_TRUE(e.band_lo >= -(g.nx - 1) && e.band_hi <= g.nx - 1)
            << "radius " << radius << ": band offsets " << e.band_lo << ", " << e.band_hi << " on rows of " << g.nx;
      auto near = [&](int64_t a, int64_t b) {
        const int64_t ax = a % g.nx, ay = (a / g.nx) % g.ny, az = a / (g.nx * g.ny);
        const int64_t bx = b % g.nx, by = (b / g.nx) % g.ny, bz = b / (g.nx * g.ny);
        return std::llabs(ax - bx) <= radius && std::llabs(ay - by) <= radius && std::llabs(az - bz) <= radius;
      };
      expect_pairs(list, g.nx * g.ny * g.nz, near,
                   std::to_string(g.nx) + "x" + std::to_string(g.ny) + "x" + std::to_string(g.nz) + " radius " +
                       std::to_string(radius));
    }
}

// Sizes near the 64-bit limits: answered at once (a radius or block larger than the grid or
// sequence), or refused when the list would be too long, never looped over or overflowed.
TEST(MaskRangeBuilders, HugeSizesAreAnsweredAtOnceOrRefused) {
  const int64_t huge = std::numeric_limits<int64_t>::max();
  int64_t n = -1;
  ASSERT_RFA_OK(rfa_mask_ranges_grid_neighbourhood(1, 1, 1, huge, nullptr, 0, &n));
  EXPECT_EQ(n, 1);
  ASSERT_RFA_OK(rfa_mask_ranges_grid_neighbourhood(3, 4, 2, int64_t(1) << 40, nullptr, 0, &n));
  EXPECT_EQ(n, 8 * 8);  // every row sees every row
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT,
                   rfa_mask_ranges_grid_neighbourhood(1, 1, int64_t(1) << 20, huge, nullptr, 0, &n),
                   "more than 2^26 entries");
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT,
                   rfa_mask_ranges_grid_neighbourhood(1, int64_t(1) << 30, int64_t(1) << 30, 1, nullptr, 0, &n),
                   "more than 2^26 entries");
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT,
                   rfa_mask_ranges_grid_neighbourhood(1, 1, int64_t(1) << 59, int64_t(1) << 40, nullptr, 0, &n),
                   "more than 2^26 entries");
  ASSERT_RFA_OK(rfa_mask_ranges_block_causal(huge, int64_t(1) << 52, nullptr, 0, &n));
  EXPECT_EQ(n, 2048);
  ASSERT_RFA_OK(rfa_mask_ranges_block_causal(huge, huge, nullptr, 0, &n));
  EXPECT_EQ(n, 1);
  rfa_mask_range_t two[2];
  ASSERT_RFA_OK(rfa_mask_ranges_block_causal(huge, int64_t(1) << 62, two, 2, &n));
  ASSERT_EQ(n, 2);
  EXPECT_EQ(two[1].q_begin, int64_t(1) << 62);
  EXPECT_EQ(two[1].q_end, huge);
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_mask_ranges_block_causal(huge, 1, nullptr, 0, &n), "more than 2^26");
  ASSERT_RFA_OK(rfa_mask_ranges_sliding_window(huge, huge, 0, nullptr, 0, &n));
  EXPECT_EQ(n, 1);
  // 2^26 documents (3.5 GiB of entries) are counted without making them; 2^26 + 1 need as many
  // entries, refused before the list is made.
  std::vector<int64_t> bounds((std::size_t(1) << 26) + 2);
  for (std::size_t i = 0; i < bounds.size(); ++i) bounds[i] = int64_t(i);
  counted_bytes = 0;
  counting = true;
  const rfa_result_t counted = rfa_mask_ranges_documents(bounds.data(), int64_t(bounds.size()) - 1, 1, nullptr, 0, &n);
  counting = false;
  ASSERT_RFA_OK(counted);
  EXPECT_EQ(n, int64_t(1) << 26);
  EXPECT_LT(counted_bytes.load(), std::size_t(1) << 16) << "bytes allocated to count the documents";
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT,
                   rfa_mask_ranges_documents(bounds.data(), int64_t(bounds.size()), 1, nullptr, 0, &n),
                   "more than 2^26");
  ASSERT_RFA_OK(rfa_mask_ranges_prefix_lm(huge, huge, nullptr, 0, &n));
  EXPECT_EQ(n, 2);
}

TEST(MaskRangeBuilders, RefuseBadArgumentsAndShortBuffers) {
  int64_t n = 0;
  rfa_mask_range_t one[1];
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_mask_ranges_causal(0, nullptr, 0, &n), "seq_total is 0");
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_mask_ranges_causal(8, nullptr, 0, nullptr), "count is NULL");
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_mask_ranges_causal(8, one, -1, &n), "capacity is -1");
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_mask_ranges_sliding_window(8, 0, 1, one, 1, &n), "window is 0");
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_mask_ranges_prefix_lm(8, 9, one, 1, &n), "prefix is 9");
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_mask_ranges_block_causal(8, 0, one, 1, &n), "block is 0");
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_mask_ranges_grid_neighbourhood(4, 0, 1, 1, one, 1, &n),
                   "every extent must be >= 1");
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_mask_ranges_grid_neighbourhood(4, 4, 1, -1, one, 1, &n),
                   "radius is -1");
  const int64_t bad_docs[] = {0, 5, 3};
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_mask_ranges_documents(bad_docs, 3, 0, one, 1, &n),
                   "must never decrease");
  const int64_t empty_sequence[] = {0, 0, 0};  // documents of no token: a sequence of 0 tokens
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_mask_ranges_documents(empty_sequence, 3, 0, one, 1, &n),
                   "doc_boundaries[2] is 0: the last boundary is the sequence's length, S >= 1");
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_mask_ranges_documents(empty_sequence, 2, 1, one, 1, &n),
                   "doc_boundaries[1] is 0");
  // Too little room: the count is reported, nothing written.
  rfa_mask_range_t two[2] = {};
  two[0].q_end = 77;
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_mask_ranges_prefix_lm(8, 3, two, 1, &n), "needs 2 entries");
  EXPECT_EQ(n, 2);
  EXPECT_EQ(two[0].q_end, 77);
}

// count inside the caller's list or inside the boundaries the builder reads: refused, nothing
// written (the list's copy would overwrite it, or it a boundary); the boundaries in the same
// memory as the list: built right (the list is made before it is written).
TEST(MaskRangeBuilders, CountOverlappingTheBuffersIsRefused) {
  rfa_mask_range_t list[4] = {};
  list[1].k_end = 77;
  int64_t* inside_list = &list[1].k_end;
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_mask_ranges_prefix_lm(16, 4, list, 4, inside_list),
                   "count points into ranges");
  EXPECT_EQ(list[1].k_end, 77);
  EXPECT_EQ(list[0].q_end, 0);
  // The last entry's last byte, and one entry past the room: the first refused, the second not.
  int64_t* last = reinterpret_cast<int64_t*>(reinterpret_cast<char*>(&list[2]) - sizeof(int64_t));
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_mask_ranges_causal(16, list, 2, last), "count points into ranges");
  // A capacity whose bytes overflow int64 (more room than memory holds): still refused.
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT,
                   rfa_mask_ranges_causal(16, list, std::numeric_limits<int64_t>::max(), &list[0].q_begin),
                   "count points into ranges");
  int64_t* past = reinterpret_cast<int64_t*>(&list[2]);
  ASSERT_RFA_OK(rfa_mask_ranges_causal(16, list, 2, past));
  EXPECT_EQ(*past, 1);
  int64_t n = -1;
  int64_t docs[] = {0, 4, 10, 16};
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_mask_ranges_documents(docs, 4, 1, list, 4, &docs[3]),
                   "count points into the input doc_boundaries");
  EXPECT_EQ(docs[3], 16);
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_mask_ranges_documents(docs, 4, 1, nullptr, 0, &docs[0]),
                   "doc_boundaries");
  EXPECT_EQ(docs[0], 0);
  ASSERT_RFA_OK(rfa_mask_ranges_documents(docs, 4, 1, list, 4, &n));
  const std::vector<rfa_mask_range_t> expected(list, list + n);
  // In place: the boundaries in the list's own memory.
  rfa_mask_range_t shared[4] = {};
  std::memcpy(shared, docs, sizeof docs);
  int64_t m = -1;
  ASSERT_RFA_OK(rfa_mask_ranges_documents(reinterpret_cast<const int64_t*>(shared), 4, 1, shared, 4, &m));
  ASSERT_EQ(m, n);
  for (int64_t i = 0; i < n; ++i) {
    const rfa_mask_range_t &got = shared[i], &want = expected[std::size_t(i)];
    EXPECT_TRUE(got.q_begin == want.q_begin && got.q_end == want.q_end && got.k_begin == want.k_begin &&
                got.k_end == want.k_end && got.band_lo == want.band_lo && got.band_hi == want.band_hi &&
                got.kind == want.kind)
        << "entry " << i;
  }
}

}  // namespace
