// SPDX-License-Identifier: BSD-3-Clause
// Scatter and gather between global tensors and shards: every layout, every storage type,
// bitwise round trips, rows in the right places, and rejected arguments.
#include "layout/shard_copy.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "core/error.hpp"
#include "layout/sequence_layout.hpp"

namespace rfa::layout {
namespace {

const rfa_layout_t kLayouts[] = {RFA_LAYOUT_CONTIGUOUS, RFA_LAYOUT_ZIGZAG, RFA_LAYOUT_STRIPE};

// Random bit patterns (NaNs included): a copy that converted values would change some.
template <class T>
std::vector<T> random_bits(std::size_t n, unsigned seed) {
  std::vector<unsigned char> bytes(n * sizeof(T));
  std::mt19937 rng(seed);
  for (auto& b : bytes) b = static_cast<unsigned char>(rng());
  std::vector<T> v(n);
  std::memcpy(v.data(), bytes.data(), bytes.size());
  return v;
}

template <class T>
bool same_bits(const T* a, const T* b) {
  return std::memcmp(a, b, sizeof(T)) == 0;
}

template <class T>
class ShardCopy : public ::testing::Test {};
using StorageTypes = ::testing::Types<float, double, bf16_t, fp16_t>;
TYPED_TEST_SUITE(ShardCopy, StorageTypes);

TYPED_TEST(ShardCopy, BshdRoundTripIsBitwiseAndRowsLandInPlace) {
  using T = TypeParam;
  const BshdDims dims{2, 3, 5};
  const std::int64_t width = dims.heads * dims.head_dim;
  for (rfa_layout_t layout : kLayouts) {
    for (int p = 1; p <= 5; ++p) {
      const std::int64_t s = 2 * p * 3;
      SCOPED_TRACE(std::string(layout_name(layout)) + " P=" + std::to_string(p));
      const std::size_t global_elements = std::size_t(dims.batch * s * width);
      const std::vector<T> global = random_bits<T>(global_elements, unsigned(p * 10 + layout));
      std::vector<T> rebuilt = random_bits<T>(global_elements, 999);  // poison: every row must be rewritten
      for (int r = 0; r < p; ++r) {
        const PositionMap rows = positions(layout, s, p, r);
        const std::int64_t local_seq = rows.length();
        std::vector<T> local(std::size_t(dims.batch * local_seq * width));
        scatter_bshd(global.data(), s, dims, rows, local.data());
        for (std::int64_t b = 0; b < dims.batch; ++b) {
          for (std::int64_t i = 0; i < local_seq; ++i) {
            for (std::int64_t e = 0; e < width; ++e) {
              ASSERT_TRUE(same_bits(&local[std::size_t((b * local_seq + i) * width + e)],
                                    &global[std::size_t((b * s + rows(i)) * width + e)]))
                  << "rank " << r << " b=" << b << " row " << i << " element " << e;
            }
          }
        }
        gather_bshd(local.data(), dims, rows, rebuilt.data(), s);
      }
      ASSERT_EQ(std::memcmp(rebuilt.data(), global.data(), global_elements * sizeof(T)), 0);
    }
  }
}

TEST(ShardCopyLse, BhsRoundTripIsBitwiseAndPositionsLandInPlace) {
  const std::int64_t batch = 2, heads = 3;
  for (rfa_layout_t layout : kLayouts) {
    for (int p = 1; p <= 5; ++p) {
      const std::int64_t s = 2 * p * 2;
      SCOPED_TRACE(std::string(layout_name(layout)) + " P=" + std::to_string(p));
      const std::size_t n = std::size_t(batch * heads * s);
      const std::vector<float> global = random_bits<float>(n, unsigned(p + 100 * layout));
      std::vector<float> rebuilt = random_bits<float>(n, 4242);
      for (int r = 0; r < p; ++r) {
        const PositionMap rows = positions(layout, s, p, r);
        const std::int64_t local_seq = rows.length();
        std::vector<float> local(std::size_t(batch * heads * local_seq));
        scatter_bhs(global.data(), s, batch, heads, rows, local.data());
        for (std::int64_t bh = 0; bh < batch * heads; ++bh) {
          for (std::int64_t i = 0; i < local_seq; ++i) {
            ASSERT_TRUE(same_bits(&local[std::size_t(bh * local_seq + i)], &global[std::size_t(bh * s + rows(i))]))
                << "rank " << r << " bh=" << bh << " i=" << i;
          }
        }
        gather_bhs(local.data(), batch, heads, rows, rebuilt.data(), s);
      }
      ASSERT_EQ(std::memcmp(rebuilt.data(), global.data(), n * sizeof(float)), 0);
    }
  }
}

TEST(ShardCopyErrors, RejectsMapsOutsideTheTensorAndNullPointers) {
  std::vector<float> global(2 * 8 * 4), local(2 * 4 * 4);
  const BshdDims dims{2, 2, 2};
  const auto expect_invalid = [](auto&& f, const char* needle) {
    try {
      f();
      ADD_FAILURE() << "accepted: " << needle;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), RFA_ERROR_INVALID_ARGUMENT);
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  const PositionMap too_far = PositionMap::one(Segment{2, 2, 4});  // reaches position 8 of 8
  expect_invalid([&] { scatter_bshd(global.data(), 8, dims, too_far, local.data()); }, "reaches global position 8");
  expect_invalid([&] { gather_bhs(local.data(), 2, 2, too_far, global.data(), 8); }, "reaches global position 8");
  const PositionMap fine = PositionMap::contiguous(4, 4);
  expect_invalid([&] { scatter_bshd<float>(nullptr, 8, dims, fine, local.data()); }, "global tensor pointer is null");
  expect_invalid([&] { gather_bshd<float>(nullptr, dims, fine, global.data(), 8); }, "local tensor pointer is null");
  expect_invalid(
      [&] {
        scatter_bshd(global.data(), 8, BshdDims{-1, 2, 2}, fine, local.data());
      },
      "must not be negative");
  const PositionMap zero_stride = PositionMap::one(Segment{0, 0, 4});
  expect_invalid([&] { scatter_bhs(global.data(), 8, 2, 2, zero_stride, local.data()); }, "stride 0");
}

}  // namespace
}  // namespace rfa::layout
