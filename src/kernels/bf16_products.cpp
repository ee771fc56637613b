// SPDX-License-Identifier: BSD-3-Clause
#include "kernels/bf16_products.hpp"

#include "kernels/amx_tiles.hpp"
#include "kernels/bf16_dot.hpp"

namespace rfa {
namespace kernels {

Bf16Products allowed_bf16_products() {
  if (host_amx_bf16_enabled()) return Bf16Products::amx_tiles;
  if (host_bf16_dot_enabled()) return Bf16Products::avx512_dot;
  return Bf16Products::none;
}

Bf16Products host_bf16_products(const AttentionParams& p) {
  if (p.head_dim % kProductStep != 0 || p.dv() % kProductStep != 0) return Bf16Products::none;
  return p.bf16_products ? *p.bf16_products : allowed_bf16_products();
}

}  // namespace kernels
}  // namespace rfa
