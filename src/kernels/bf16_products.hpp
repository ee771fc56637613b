// SPDX-License-Identifier: BSD-3-Clause
// Which hardware bf16 products, if any, run the host's bf16 kernels of a given shape: Intel AMX
// tiles, AVX512-BF16 dot products, or none (the portable kernels, which widen bf16 to fp32).
// Free of vector code, so that code compiled once for every kernel build (the tests') may ask.
#pragma once

#include "kernels/flash_attention.hpp"

namespace rfa {
namespace kernels {

/// Both kinds of products take M, N and K in multiples of this (the kernels pad to it), so a
/// head_dim must be one to run on them.
constexpr int kProductStep = 32;

enum class Bf16Products : int {
  none,        ///< the portable kernels: no such products in the build or on the CPU, switched
               ///< off (RFA_HOST_AMX=0 and RFA_HOST_BF16_DOT=0), head_dim or the value head
               ///< dim not a multiple of kProductStep
  amx_tiles,   ///< AMX tiles (host_amx_bf16_enabled())
  avx512_dot,  ///< AVX512-BF16 dot products (host_bf16_dot_enabled(), and no AMX tiles enabled)
};

/// The products the switches and the CPU allow now, whatever the shape: AMX tiles unless
/// RFA_HOST_AMX=0 (where the build and the CPU have them and the kernel grants the tile state),
/// else AVX512-BF16 dot products unless RFA_HOST_BF16_DOT=0, else none. A context reads it once,
/// at its creation (engine::AttentionConfig::bf16_products).
Bf16Products allowed_bf16_products();

/// The products bf16 forward and backward kernels of this shape run on: p.bf16_products where
/// set, else allowed_bf16_products() now; none for a head dim the products do not take.
Bf16Products host_bf16_products(const AttentionParams& p);

}  // namespace kernels
}  // namespace rfa
