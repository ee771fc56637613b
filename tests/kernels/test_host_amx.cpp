// SPDX-License-Identifier: BSD-3-Clause
// The AMX switch and what the kernels report they allocate: the engine's memory formulas add
// these figures, and the engine tests check those formulas against every allocation.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "kernels/amx_tiles.hpp"
#include "kernels/flash_attention.hpp"

namespace rfa {
namespace kernels {
namespace {

/// Sets RFA_HOST_AMX for one scope and restores what was there.
class ScopedAmxSetting {
 public:
  explicit ScopedAmxSetting(const char* value) {
    const char* old = std::getenv("RFA_HOST_AMX");
    had_ = old != nullptr;
    if (had_) old_ = old;
    setenv("RFA_HOST_AMX", value, 1);
  }
  ~ScopedAmxSetting() {
    if (had_) {
      setenv("RFA_HOST_AMX", old_.c_str(), 1);
    } else {
      unsetenv("RFA_HOST_AMX");
    }
  }

 private:
  bool had_ = false;
  std::string old_;
};

TEST(HostAmx, ZeroInTheEnvironmentTurnsTheTilesOff) {
  const ScopedAmxSetting off("0");
  EXPECT_FALSE(host_amx_bf16_enabled());
  const AttentionParams p = make_params(1, 300, 300, 4, 2, 128, RFA_MASK_CAUSAL);
  // The portable forward's fp32 copies of K and V: 2 kv heads, 384 keys (four 96-key tiles),
  // rows of 128 + 16 floats, and two table entries per tile.
  EXPECT_EQ(flash_forward_workspace_bytes(p, RFA_DTYPE_BFLOAT16), 8 * 4 + 2 * 4 * 2 * 384 * 144);
  // The portable backward's fp32 copies of Q and dO: 4 heads of 384 rows (four 96-row tiles).
  EXPECT_EQ(flash_backward_workspace_bytes(p, RFA_DTYPE_BFLOAT16), 2 * 4 * 4 * 384 * 144);
}

TEST(HostAmx, OnByDefaultWhereTheBuildHasThem) {
  const ScopedAmxSetting on("1");
#if RFA_HOST_AMX
  // A build for an AMX CPU runs on one: Linux grants the tile state unless it is too old.
  EXPECT_TRUE(host_amx_bf16_enabled());
#else
  EXPECT_FALSE(host_amx_bf16_enabled());
#endif
}

TEST(HostAmx, WorkspaceBytesOnAndOffTheTiles) {
  const ScopedAmxSetting on("1");
  const AttentionParams p = make_params(2, 300, 200, 4, 2, 128, RFA_MASK_NONE);
  // Off the tiles the forward copies K and V to fp32 head by head: 2 x 2 (batch, kv head)
  // heads of 288 keys (three 96-key tiles), rows of head_dim + 16 floats, and two table entries per tile.
  const std::int64_t portable_forward = 8 * 3 + 2 * 4 * 2 * 2 * 288 * 144;
  EXPECT_EQ(flash_forward_workspace_bytes(p, RFA_DTYPE_FLOAT32), portable_forward);
  // and the backward Q and dO: 2 x 4 (batch, head) heads of 384 rows (four 96-row tiles).
  const std::int64_t portable_backward = 2 * 4 * 2 * 4 * 384 * 144;
  EXPECT_EQ(flash_backward_workspace_bytes(p, RFA_DTYPE_FLOAT16), portable_backward);
  const AttentionParams odd_dim = make_params(2, 300, 200, 4, 2, 40, RFA_MASK_NONE);  // not a multiple of 32
  EXPECT_EQ(flash_forward_workspace_bytes(odd_dim, RFA_DTYPE_BFLOAT16), 8 * 3 + 2 * 4 * 2 * 2 * 288 * 56);
  EXPECT_EQ(flash_backward_workspace_bytes(odd_dim, RFA_DTYPE_BFLOAT16), 2 * 4 * 2 * 4 * 384 * 56);
  if (host_amx_bf16_enabled()) {
    // K and V of every kv head (2 x 2) over whole 128-key tiles; Q^T and dO^T of every head (2 x 4).
    EXPECT_EQ(flash_forward_workspace_bytes(p, RFA_DTYPE_BFLOAT16), 4 * 2 * 2 * 256 * 128);
    EXPECT_EQ(flash_backward_workspace_bytes(p, RFA_DTYPE_BFLOAT16), 4 * 2 * 4 * 384 * 128);
  } else {
    EXPECT_EQ(flash_forward_workspace_bytes(p, RFA_DTYPE_BFLOAT16), portable_forward);
    EXPECT_EQ(flash_backward_workspace_bytes(p, RFA_DTYPE_BFLOAT16), portable_backward);
  }
}

}  // namespace
}  // namespace kernels
}  // namespace rfa
