// SPDX-License-Identifier: BSD-3-Clause
// What the bf16 kernels on Intel AMX tiles share: whether they may run, the one tile shape they
// use, bf16 rounding and hi + lo splitting of fp32 vectors, and a blocked product on the tiles.
// Everything but host_amx_bf16_enabled() exists only where the build targets AMX-BF16
// (-march=native on a Sapphire Rapids or later CPU); elsewhere the portable kernels run.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/simd.hpp"  // RFA_NATIVE_VECTORS

#if RFA_NATIVE_VECTORS && defined(__AMX_TILE__) && defined(__AMX_BF16__) && defined(__AVX512BF16__) && \
    defined(__linux__)
#define RFA_HOST_AMX 1
#include <immintrin.h>
#else
#define RFA_HOST_AMX 0
#endif

namespace rfa {
namespace kernels {

/// Whether bf16 work would run on AMX tiles now: the build targets them, Linux granted the
/// tile state to this process (asked once), and the environment does not say RFA_HOST_AMX=0
/// (read on every call, so a test can compare both kernels in one process).
bool host_amx_bf16_enabled();

#if RFA_HOST_AMX
namespace amx {

constexpr int kBlock = 16;  // rows and columns of a C tile (16 x 16 fp32)
constexpr int kChunk = 32;  // bf16 values along the reduction in a row of an A tile

/// Every tile as 16 rows of 64 bytes: C 16 x 16 fp32, A 16 x 32 bf16, B 16 pairs x 16 columns.
/// The configuration belongs to the thread: a kernel sets it at the start of each team.
void configure_tiles();

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
/// tile takes along its reduction dimension.
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

/// C[M][N] (+)= (A_hi + A_lo) (B_hi + B_lo) without the lo x lo term (at most one of the two
/// has a lo part), in 32 x 32 blocks of C held in four tiles while K streams past. M, N and K
/// are multiples of 32; C is fp32 with rows ldc floats apart.
void gemm(int M, int N, int K, RowsA a, PairsB b, float* c, std::size_t ldc, bool accumulate);

}  // namespace amx
#endif

}  // namespace kernels
}  // namespace rfa
