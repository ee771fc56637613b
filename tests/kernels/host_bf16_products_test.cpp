// SPDX-License-Identifier: BSD-3-Clause
// The switches of the bf16 kernels on hardware bf16 products (AMX tiles, AVX512-BF16 dot
// products) and what the kernels report they allocate: the engine's memory formulas add these
// figures, and the engine tests check those formulas against every allocation.
#include <gtest/gtest.h>

#include "kernels/amx_tiles.hpp"
#include "kernels/bf16_dot.hpp"
#include "kernels/bf16_products.hpp"
#include "kernels/flash_attention.hpp"
#include "scoped_env.hpp"

namespace rfa {
namespace kernels {
namespace {

using test::ScopedEnv;

TEST(HostBf16Products, ZeroInTheEnvironmentTurnsThemOff) {
  const ScopedEnv amx_off("RFA_HOST_AMX", "0");
  const ScopedEnv dot_off("RFA_HOST_BF16_DOT", "0");
  EXPECT_FALSE(host_amx_bf16_enabled());
  EXPECT_FALSE(host_bf16_dot_enabled());
  const AttentionParams p = make_params(1, 300, 300, 4, 2, 128, RFA_MASK_CAUSAL);
  EXPECT_EQ(host_bf16_products(p), Bf16Products::none);
  // The portable forward's fp32 copies of K and V: 2 kv heads, 384 keys (four 96-key tiles),
  // rows of 128 + 16 floats, and two table entries per tile.
  EXPECT_EQ(flash_forward_workspace_bytes(p, RFA_DTYPE_BFLOAT16), 8 * 4 + 2 * 4 * 2 * 384 * 144);
  // The portable backward's fp32 copies of Q and dO: 4 heads of 384 rows (four 96-row tiles).
  EXPECT_EQ(flash_backward_workspace_bytes(p, RFA_DTYPE_BFLOAT16), 2 * 4 * 4 * 384 * 144);
}

TEST(HostBf16Products, OnByDefaultWhereTheBuildHasThem) {
  const ScopedEnv amx_on("RFA_HOST_AMX", "1");
  const ScopedEnv dot_on("RFA_HOST_BF16_DOT", "1");
  const AttentionParams p = make_params(1, 300, 300, 4, 2, 128, RFA_MASK_CAUSAL);
#if RFA_HOST_AMX
  // A build for an AMX CPU runs on one: Linux grants the tile state unless it is too old.
  EXPECT_TRUE(host_amx_bf16_enabled());
  EXPECT_EQ(host_bf16_products(p), Bf16Products::amx_tiles);
#else
  EXPECT_FALSE(host_amx_bf16_enabled());
#endif
#if RFA_HOST_BF16_PAIRS
  EXPECT_TRUE(host_bf16_dot_enabled());
#if !RFA_HOST_AMX
  EXPECT_EQ(host_bf16_products(p), Bf16Products::avx512_dot);
#endif
  {
    // Without the tiles, the dot products take the work.
    const ScopedEnv amx_off("RFA_HOST_AMX", "0");
    EXPECT_EQ(host_bf16_products(p), Bf16Products::avx512_dot);
  }
#else
  EXPECT_FALSE(host_bf16_dot_enabled());
  EXPECT_EQ(host_bf16_products(p), Bf16Products::none);
#endif
  // Head dims that are not a multiple of 32 stay on the portable kernel everywhere.
  EXPECT_EQ(host_bf16_products(make_params(1, 300, 300, 4, 2, 40, RFA_MASK_CAUSAL)), Bf16Products::none);
  // Soft-capped scores run on the same products as uncapped ones: their kernels cap.
  AttentionParams capped = p;
  capped.softcap = 30.0f;
  EXPECT_EQ(host_bf16_products(capped), host_bf16_products(p));
}

TEST(HostBf16Products, WorkspaceBytesOnAndOffThem) {
  const ScopedEnv amx_on("RFA_HOST_AMX", "1");
  const ScopedEnv dot_on("RFA_HOST_BF16_DOT", "1");
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
  // On either kind of bf16 products the forward packs K and V of every kv head (2 x 2) over
  // whole 128-key tiles (two table entries per tile), the backward Q^T and dO^T of every head
  // (2 x 4) over whole 128-row tiles.
  const bool on_products = host_bf16_products(p) != Bf16Products::none;
  EXPECT_EQ(flash_forward_workspace_bytes(p, RFA_DTYPE_BFLOAT16),
            on_products ? 8 * 2 + 4 * 2 * 2 * 256 * 128 : portable_forward);
  EXPECT_EQ(flash_backward_workspace_bytes(p, RFA_DTYPE_BFLOAT16),
            on_products ? 4 * 2 * 4 * 384 * 128 : portable_backward);
}

// Both forwards copy only the key tiles some query sees: 16 causal queries at the start of 1000
// keys see the first tile of 128 (on bf16 products) or of 96 keys (fp32 copies), and the
// tables keep two entries for every tile.
TEST(HostBf16Products, ForwardWorkspaceHoldsOnlyTheKeyTilesSeen) {
  const ScopedEnv amx_on("RFA_HOST_AMX", "1");
  const ScopedEnv dot_on("RFA_HOST_BF16_DOT", "1");
  const AttentionParams p = make_params(1, 16, 1000, 2, 1, 64, RFA_MASK_CAUSAL);
  const std::int64_t fp32_copies = 8 * 11 + 4 * 96 * (80 + 80);
  EXPECT_EQ(flash_forward_workspace_bytes(p, RFA_DTYPE_FLOAT32), fp32_copies);
  const bool on_products = host_bf16_products(p) != Bf16Products::none;
  EXPECT_EQ(flash_forward_workspace_bytes(p, RFA_DTYPE_BFLOAT16),
            on_products ? 8 * 8 + 2 * 128 * (64 + 64) : fp32_copies);
}

}  // namespace
}  // namespace kernels
}  // namespace rfa
