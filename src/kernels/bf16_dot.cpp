// SPDX-License-Identifier: BSD-3-Clause
#include "kernels/bf16_dot.hpp"

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "core/environment.hpp"

namespace rfa {
namespace kernels {

#if RFA_HOST_BF16_PAIRS

bool host_bf16_dot_enabled() {
  const char* env = env_value(Env::host_bf16_dot);
  return env == nullptr || std::strcmp(env, "0") != 0;
}

namespace dot {
namespace {

constexpr int kWidth = 32;     // columns of C per block: two 16-lane registers
constexpr int kBlockRows = 8;  // rows of C per block

inline __m512bh as_bh(__m512i x) {
  __m512bh r;
  __builtin_memcpy(&r, &x, sizeof r);
  return r;
}

/// A's pair (A[i][k], A[i][k + 1]) in every 32-bit lane.
inline __m512bh pair_of(const std::uint16_t* at) {
  std::int32_t word;
  std::memcpy(&word, at, sizeof word);
  return as_bh(_mm512_set1_epi32(word));
}

/// Rows [i0, i1) (a multiple of kBlockRows apart) of the column block C[:][j : j + 32]: per
/// block the 8 x 32 results stay in 16 registers for the whole reduction, and per pair of K each
/// B register feeds 8 dot products. 8 rows, not the 12 of the fp32 products (24 accumulators):
/// on Zen 4 a 128^3 product in L1 runs at 213 GFLOP/s against 198 (92% and 85% of the
/// measured peak), and M, a multiple of 32, then needs no shorter last block. While a block
/// runs, the next block's rows of A are prefetched, a line per row every 16 pairs: A comes from
/// L2 or further (Q and dO rows straight from the tensors), and the dot products wait on it
/// otherwise (the kernel's backward 4-10% slower on Zen 4 without; both figures: perf/RESULTS.md,
/// "2026-11-26 (evening, Zen 4 VM) — bf16 on AVX512-BF16 dot products: all eight cases >= 1.11x
/// PyTorch"). Not inlined into gemm(): with its own frame the row pointers stay in registers.
template <bool kALo, bool kBLo>
__attribute__((noinline)) void column_block(int i0, int i1, int K, pairs::RowsA a, pairs::PairsB b, int j, float* c,
                                            std::size_t ldc, bool accumulate) {
  constexpr int MR = kBlockRows;
  for (int i = i0; i < i1; i += MR) {
    __m512 acc[MR][2];
    float* ci = c + std::size_t(i) * ldc + j;
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
      acc[r][0] = accumulate ? _mm512_loadu_ps(ci + r * ldc) : _mm512_setzero_ps();
      acc[r][1] = accumulate ? _mm512_loadu_ps(ci + r * ldc + 16) : _mm512_setzero_ps();
    }
    const std::uint16_t* ahi = a.hi + std::size_t(i) * a.ld;
    const std::uint16_t* alo = kALo ? a.lo + std::size_t(i) * a.ld : nullptr;
    const std::uint16_t* bhi = b.hi + 2 * std::size_t(j);
    const std::uint16_t* blo = kBLo ? b.lo + 2 * std::size_t(j) : nullptr;
    const bool next_block = i + MR < i1;
    for (int k = 0; k < K; k += 2) {
      if (k % 32 == 0 && next_block) {
#pragma GCC unroll 16
        for (int r = 0; r < MR; ++r) {
          _mm_prefetch(reinterpret_cast<const char*>(ahi + (MR + r) * a.ld + k), _MM_HINT_T0);
          if (kALo) _mm_prefetch(reinterpret_cast<const char*>(alo + (MR + r) * a.ld + k), _MM_HINT_T0);
        }
      }
      // acc += rows' pairs x (x0, x1): the first term, then A's or B's second term if any.
      const auto add_products = [&](const std::uint16_t* rows, __m512bh x0, __m512bh x1) {
#pragma GCC unroll 16
        for (int r = 0; r < MR; ++r) {
          const __m512bh ar = pair_of(rows + r * a.ld + k);
          acc[r][0] = _mm512_dpbf16_ps(acc[r][0], ar, x0);
          acc[r][1] = _mm512_dpbf16_ps(acc[r][1], ar, x1);
        }
      };
      const std::size_t brow = std::size_t(k / 2) * b.ld;
      const __m512bh b0 = as_bh(_mm512_loadu_si512(bhi + brow));
      const __m512bh b1 = as_bh(_mm512_loadu_si512(bhi + brow + 32));
      add_products(ahi, b0, b1);
      if (kALo) add_products(alo, b0, b1);
      if (kBLo) add_products(ahi, as_bh(_mm512_loadu_si512(blo + brow)), as_bh(_mm512_loadu_si512(blo + brow + 32)));
    }
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
      _mm512_storeu_ps(ci + r * ldc, acc[r][0]);
      _mm512_storeu_ps(ci + r * ldc + 16, acc[r][1]);
    }
  }
}

}  // namespace

void gemm(int M, int N, int K, pairs::RowsA a, pairs::PairsB b, float* c, std::size_t ldc, bool accumulate) {
  // Column blocks outermost: a block of B (K / 2 rows of 128 bytes, 8 KiB at K = 128) stays in
  // L1 while every row block of A streams past it.
  for (int j = 0; j < N; j += kWidth) {
    if (a.lo != nullptr) {
      column_block<true, false>(0, M, K, a, b, j, c, ldc, accumulate);
    } else if (b.lo != nullptr) {
      column_block<false, true>(0, M, K, a, b, j, c, ldc, accumulate);
    } else {
      column_block<false, false>(0, M, K, a, b, j, c, ldc, accumulate);
    }
  }
}

}  // namespace dot

#else  // no AVX512-BF16 in this build

bool host_bf16_dot_enabled() { return false; }

#endif

}  // namespace kernels
}  // namespace rfa
