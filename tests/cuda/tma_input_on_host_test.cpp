// SPDX-License-Identifier: BSD-3-Clause
// How the Hopper kernels' inputs become TMA descriptors' strides (kernels_cuda/src/api_support.cpp,
// sm90_input), on the host: strides of 0 and the strides of modes of one index become the
// contiguous layout's, a broadcast and strides of 2^40 bytes or more are refused with
// RFA_CUDA_ERROR_UNSUPPORTED naming the sm80 path, for 16-bit inputs and the fp32 dQ alike, at the
// limit and one element either side. cuTensorMapEncodeTiled rejects such strides on a GPU, and
// in a release build CuTe only prints that and launches the kernel with the bad descriptor.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "api_support.hpp"

namespace rfa_cuda {
namespace detail {
namespace {

struct Extents {
  std::int64_t batch, seq, heads, head_dim;
};

rfa_cuda_status input(const rfa_cuda_strides& s, const Extents& e, std::size_t bytes, StridedTensor& t) {
  static char data[16];
  t = resolve(data, s, e.seq, e.heads, e.head_dim);
  return sm90_input("k", s, e.batch, e.seq, e.heads, e.head_dim, bytes, t);
}

void expect_strides(const StridedTensor& t, std::int64_t batch, std::int64_t seq, std::int64_t head) {
  EXPECT_EQ(t.batch, batch);
  EXPECT_EQ(t.seq, seq);
  EXPECT_EQ(t.head, head);
}

TEST(TmaInput, ContiguousAndGivenStridesAreKept) {
  const Extents e{2, 100, 4, 64};
  StridedTensor t{};
  ASSERT_EQ(input({0, 0, 0}, e, 2, t), RFA_CUDA_SUCCESS);
  expect_strides(t, 100 * 4 * 64, 4 * 64, 64);
  ASSERT_EQ(input({1 << 20, 512, 128}, e, 2, t), RFA_CUDA_SUCCESS);
  expect_strides(t, 1 << 20, 512, 128);
}

TEST(TmaInput, ModesOfOneIndexTakeTheContiguousStride) {
  // Any stride on a mode of one index addresses nothing, 2^40 bytes too.
  const std::int64_t huge = std::int64_t(1) << 45;
  StridedTensor t{};
  ASSERT_EQ(input({huge, 256, 64}, {1, 100, 4, 64}, 2, t), RFA_CUDA_SUCCESS) << last_message();
  expect_strides(t, 100 * 4 * 64, 256, 64);
  ASSERT_EQ(input({1 << 16, huge, 64}, {2, 1, 4, 64}, 2, t), RFA_CUDA_SUCCESS) << last_message();
  expect_strides(t, 1 << 16, 4 * 64, 64);
  ASSERT_EQ(input({1 << 16, 512, huge}, {2, 100, 1, 64}, 2, t), RFA_CUDA_SUCCESS) << last_message();
  expect_strides(t, 1 << 16, 512, 64);
}

TEST(TmaInput, BroadcastIsRefused) {
  StridedTensor t{};
  ASSERT_EQ(input({0, 256, 64}, {2, 100, 4, 64}, 2, t), RFA_CUDA_ERROR_UNSUPPORTED);
  EXPECT_NE(std::string(last_message()).find("sm80"), std::string::npos) << last_message();
}

TEST(TmaInput, StridesFrom2To40BytesAreRefusedOnEveryMode) {
  const Extents e{2, 100, 4, 64};
  for (const std::size_t bytes : {std::size_t(2), sizeof(float)}) {
    const std::int64_t limit = (std::int64_t(1) << 40) / std::int64_t(bytes);
    for (int mode = 0; mode < 3; ++mode) {
      for (const std::int64_t delta : {-8, 0, 8}) {
        rfa_cuda_strides s{1 << 20, 512, 128};
        std::int64_t& stride = mode == 0 ? s.batch : mode == 1 ? s.seq : s.head;
        stride = limit + delta;
        StridedTensor t{};
        const rfa_cuda_status status = input(s, e, bytes, t);
        const std::string what = "mode " + std::to_string(mode) + ", " + std::to_string(bytes) + "-byte elements, " +
                                 "stride limit " +
                                 (delta < 0    ? "- 8"
                                  : delta == 0 ? ""
                                               : "+ 8");
        if (delta < 0) {
          EXPECT_EQ(status, RFA_CUDA_SUCCESS) << what << ": " << last_message();
        } else {
          EXPECT_EQ(status, RFA_CUDA_ERROR_UNSUPPORTED) << what;
          EXPECT_NE(std::string(last_message()).find("2^40 bytes"), std::string::npos) << last_message();
          EXPECT_NE(std::string(last_message()).find("sm80"), std::string::npos) << last_message();
        }
      }
    }
  }
}

}  // namespace
}  // namespace detail
}  // namespace rfa_cuda
