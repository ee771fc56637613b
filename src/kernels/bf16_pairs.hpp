// SPDX-License-Identifier: BSD-3-Clause
// bf16 operands in the form that hardware bf16 products consume, shared by the two engines that
// compute them (Intel AMX tiles, kernels/amx_tiles.hpp; AVX512-BF16 dot products,
// kernels/bf16_dot.hpp): a product's B operand stored as pairs along the reduction, bf16
// rounding, and hi + lo splitting of fp32 vectors. Both engines add, per fp32 result, the two
// products of one pair to it, so one operand layout serves both.
// Exists only where the build targets AVX512-BF16 (-march=native on a CPU that has it: Intel
// Cooper Lake and Sapphire Rapids or later, AMD Zen 4 or later).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/simd.hpp"  // RFA_NATIVE_VECTORS

#if RFA_NATIVE_VECTORS && defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512BF16__)
#define RFA_HOST_BF16_PAIRS 1
#include <immintrin.h>
#else
#define RFA_HOST_BF16_PAIRS 0
#endif

#if RFA_HOST_BF16_PAIRS
namespace rfa {
namespace kernels {
namespace pairs {

using f16 = simd::f16;

/// x rounded to bf16 (nearest even), as 16 raw values.
inline __m256i round_bf16(f16 x) {
  __m512 xs;
  __builtin_memcpy(&xs, &x, sizeof xs);
  const __m256bh h = _mm512_cvtneps_pbh(xs);
  __m256i bits;
  __builtin_memcpy(&bits, &h, sizeof bits);
  return bits;
}

/// bf16 raw values widened to fp32 bit patterns (the masked forms: the unmasked ones start
/// from an "undefined" vector GCC 12 warns about).
inline __m512i widen_bf16(__m256i bits) {
  return _mm512_maskz_slli_epi32(0xffff, _mm512_maskz_cvtepu16_epi32(0xffff, bits), 16);
}

/// x as hi + lo, two bf16 values that together carry 16 significant bits:
/// |x - hi - lo| <= 2^-17 |x|, as close as fp32 sums need.
inline void split_bf16(f16 x, __m256i& hi, __m256i& lo) {
  hi = round_bf16(x);
  const __m512i h = widen_bf16(hi);
  f16 hf;
  __builtin_memcpy(&hf, &h, sizeof hf);
  lo = round_bf16(x - hf);
}

/// Two rows of 16 bf16 as 16 pairs (32-bit words: even row low, odd row high), the form a B
/// operand takes along its reduction dimension.
inline __m512i interleave_rows(__m256i even, __m256i odd) {
  return _mm512_or_si512(_mm512_maskz_cvtepu16_epi32(0xffff, even), widen_bf16(odd));
}

/// A bf16 matrix with rows `ld` values apart; `lo` (optional) is a second term added to it.
struct RowsA {
  const std::uint16_t* hi;
  const std::uint16_t* lo;
  std::size_t ld;
};
/// A bf16 matrix B[K][N] stored as pairs along K: row r holds (B[2r][n], B[2r + 1][n]) for
/// every n, `ld` bf16 values per row (2 N for a whole matrix); `lo` (optional) as above.
struct PairsB {
  const std::uint16_t* hi;
  const std::uint16_t* lo;
  std::size_t ld;
};

}  // namespace pairs
}  // namespace kernels
}  // namespace rfa
#endif
