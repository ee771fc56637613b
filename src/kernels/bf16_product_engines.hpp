// SPDX-License-Identifier: BSD-3-Clause
// The two engines of hardware bf16 products behind one interface, so that each bf16 kernel body
// is written once and instantiated for both: begin()/end() around a team's work, gemm() with
// the operands of kernels/bf16_pairs.hpp, and kTwoTerms, whether fp32 intermediates (P, dS)
// should enter products as bf16 hi + lo. On AMX tiles the second term costs little next to the
// tiles' speed, so the kernels keep fp32 accuracy with it. On AVX512-BF16 dot products it
// costs as much as the first, which matters where three of five products take P or dS (the
// backward, which there rounds them to one term, as FlashAttention does); the forward decides
// by its output and by what its caller asks of fp32 partials (kernels/flash_forward_bf16.cpp).
#pragma once

#include "kernels/amx_tiles.hpp"
#include "kernels/bf16_dot.hpp"
#include "kernels/bf16_products.hpp"

#if RFA_HOST_BF16_PAIRS
namespace rfa {
namespace kernels {

#if RFA_HOST_AMX
/// The products on AMX tiles: the tile configuration belongs to the thread, set per team.
struct AmxProducts {
  static constexpr bool kTwoTerms = true;
  static void begin() { amx::configure_tiles(); }
  static void end() { _tile_release(); }
  static void gemm(int M, int N, int K, pairs::RowsA a, pairs::PairsB b, float* c, std::size_t ldc, bool acc) {
    amx::gemm(M, N, K, a, b, c, ldc, acc);
  }
};
#endif

/// The products on AVX512-BF16 dot instructions.
struct DotProducts {
  static constexpr bool kTwoTerms = false;
  static void begin() {}
  static void end() {}
  static void gemm(int M, int N, int K, pairs::RowsA a, pairs::PairsB b, float* c, std::size_t ldc, bool acc) {
    dot::gemm(M, N, K, a, b, c, ldc, acc);
  }
};

/// Calls run(engine), with engine an AmxProducts or a DotProducts as host_bf16_products(p)
/// names, and returns true; returns false without calling it when that names none.
template <class Run>
bool run_on_bf16_products(const AttentionParams& p, Run&& run) {
  switch (host_bf16_products(p)) {
#if RFA_HOST_AMX
    case Bf16Products::amx_tiles: run(AmxProducts{}); return true;
#endif
    case Bf16Products::avx512_dot: run(DotProducts{}); return true;
    default: return false;
  }
}

}  // namespace kernels
}  // namespace rfa
#endif
