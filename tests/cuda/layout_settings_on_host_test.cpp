// SPDX-License-Identifier: BSD-3-Clause
// The sm80 kernels' two layout variables on the host (kernels_cuda/src/sm80_layout_settings.cpp):
// the backward's key tile by default and when asked (64 or 128; 128 up to 256 Q/K + V columns,
// the default up to 128), the tile beside the default that the kernel test and benchmark run
// (other_backward_key_tile), and the forward's query rows a warp by default and when asked (16 or
// 32; 32 up to a value head dim of 128, the default where both head dims are at most 128) with the
// layout beside the default (other_forward_rows_per_warp), on the head dims at each limit and
// either side, and every refusal's status and message. The kernel test checks the same on a GPU through the public
// calls; here a change to the rules fails without one.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "api_support.hpp"
#include "sm80_layout_settings.hpp"

namespace rfa_cuda {
namespace detail {
namespace {

struct Dims {
  std::int64_t head_dim, value_dim;
  int default_keys, other_keys;  // other 0: no tile beside the default
};

// Columns 64, 128 (the default's limit) and 129, 136, 256 (128's limit) and 257, 320, 512.
const Dims kDims[] = {{32, 32, 128, 64},   {64, 64, 128, 64}, {64, 65, 64, 128}, {72, 64, 64, 128},
                      {128, 128, 64, 128}, {128, 129, 64, 0}, {192, 128, 64, 0}, {256, 256, 64, 0}};

std::string dims_of(const Dims& d) { return std::to_string(d.head_dim) + "/" + std::to_string(d.value_dim); }

TEST(Sm80LayoutSettings, BackwardKeyTileByDefaultAndBesideIt) {
  for (const Dims& d : kDims) {
    int keys = 0;
    for (const char* unset : {static_cast<const char*>(nullptr), ""}) {
      ASSERT_EQ(backward_key_tile(unset, d.head_dim, d.value_dim, keys), RFA_CUDA_SUCCESS) << dims_of(d);
      EXPECT_EQ(keys, d.default_keys) << dims_of(d);
    }
    EXPECT_EQ(other_backward_key_tile(d.head_dim, d.value_dim), d.other_keys) << dims_of(d);
    // The tile beside the default is one the variable takes; where there is none, the value that
    // is not the default is refused as unsupported, naming the variable and the limit.
    const int not_default = d.default_keys == 128 ? 64 : 128;
    const rfa_cuda_status status =
        backward_key_tile(std::to_string(not_default).c_str(), d.head_dim, d.value_dim, keys);
    if (d.other_keys != 0) {
      ASSERT_EQ(status, RFA_CUDA_SUCCESS) << dims_of(d) << ": " << last_message();
      EXPECT_EQ(keys, d.other_keys) << dims_of(d);
    } else {
      EXPECT_EQ(status, RFA_CUDA_ERROR_UNSUPPORTED) << dims_of(d);
      EXPECT_NE(std::string(last_message())
                    .find("RFA_CUDA_SM80_BACKWARD_KEY_TILE=128 takes head dims whose Q/K and "
                          "V columns add up to at most 256"),
                std::string::npos)
          << last_message();
    }
    ASSERT_EQ(backward_key_tile("64", d.head_dim, d.value_dim, keys), RFA_CUDA_SUCCESS) << dims_of(d);
    EXPECT_EQ(keys, 64);
  }
}

TEST(Sm80LayoutSettings, MalformedValuesAreRefusedByName) {
  int value = 0;
  for (const char* bad : {"96", "1280", "128 ", " 64", "sixty-four", "0", "-64"}) {
    EXPECT_EQ(backward_key_tile(bad, 128, 128, value), RFA_CUDA_ERROR_INVALID_ARGUMENT) << bad;
    EXPECT_NE(std::string(last_message()).find("RFA_CUDA_SM80_BACKWARD_KEY_TILE is 64 or 128"), std::string::npos)
        << last_message();
    EXPECT_EQ(forward_rows_per_warp(bad, 128, value), RFA_CUDA_ERROR_INVALID_ARGUMENT) << bad;
    EXPECT_NE(std::string(last_message()).find("RFA_CUDA_SM80_FORWARD_ROWS_PER_WARP is 16 or 32"), std::string::npos)
        << last_message();
  }
}

struct ForwardDims {
  std::int64_t head_dim, value_dim;
  int default_rows, other_rows;  // on compute capability 9.x; other 0: no layout beside the default
};

// Each head dim at the default's limit (128) and past it on either side (Q/K or V), and at 32
// rows' own limit (a value head dim of 128) and past it.
const ForwardDims kForwardDims[] = {{32, 32, 32, 16},   {64, 64, 32, 16},  {128, 128, 32, 16}, {129, 128, 16, 32},
                                    {192, 128, 16, 32}, {128, 129, 16, 0}, {136, 136, 16, 0},  {256, 256, 16, 0}};

std::string dims_of(const ForwardDims& d) { return std::to_string(d.head_dim) + "/" + std::to_string(d.value_dim); }

// Compute capability 8.x keeps 16 rows by default at every head dim (32 is measured faster on an
// H100 only), with 32 beside it where the value head dim takes it; 9.x and later take the table.
TEST(Sm80LayoutSettings, ForwardRowsPerWarpByDefaultAndBesideIt) {
  for (const int major : {8, 9, 10})
    for (const ForwardDims& d : kForwardDims) {
      const std::string where = dims_of(d) + " on " + std::to_string(major) + ".x";
      const int want_default = major >= 9 ? d.default_rows : 16;
      const int want_other = major >= 9 ? d.other_rows : d.value_dim <= 128 ? 32 : 0;
      EXPECT_EQ(default_forward_rows_per_warp(d.head_dim, d.value_dim, major), want_default) << where;
      EXPECT_EQ(other_forward_rows_per_warp(d.head_dim, d.value_dim, major), want_other) << where;
    }
  // The variable is read without a device: unset, it leaves the choice to the device's default (0).
  for (const ForwardDims& d : kForwardDims) {
    int rows = -1;
    for (const char* unset : {static_cast<const char*>(nullptr), ""}) {
      ASSERT_EQ(forward_rows_per_warp(unset, d.value_dim, rows), RFA_CUDA_SUCCESS) << dims_of(d);
      EXPECT_EQ(rows, 0) << dims_of(d);
    }
    ASSERT_EQ(forward_rows_per_warp("16", d.value_dim, rows), RFA_CUDA_SUCCESS) << dims_of(d);
    EXPECT_EQ(rows, 16);
    // 32 is taken up to a value head dim of 128, wherever it is not the default too; past it, it
    // is refused as unsupported, naming the variable and the limit.
    const rfa_cuda_status wide = forward_rows_per_warp("32", d.value_dim, rows);
    if (d.value_dim <= 128) {
      ASSERT_EQ(wide, RFA_CUDA_SUCCESS) << dims_of(d) << ": " << last_message();
      EXPECT_EQ(rows, 32);
    } else {
      EXPECT_EQ(wide, RFA_CUDA_ERROR_UNSUPPORTED) << dims_of(d);
      EXPECT_NE(std::string(last_message())
                    .find("RFA_CUDA_SM80_FORWARD_ROWS_PER_WARP=32 takes value head dims up to "
                          "128, not " +
                          std::to_string(d.value_dim)),
                std::string::npos)
          << last_message();
    }
  }
}

}  // namespace
}  // namespace detail
}  // namespace rfa_cuda
