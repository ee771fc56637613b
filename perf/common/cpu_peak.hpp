// SPDX-License-Identifier: BSD-3-Clause
// The single-core fp32 FMA peak of this machine, measured rather than looked up: a loop of
// independent FMA chains on the widest vectors the build uses (enough chains to cover the FMA
// latency on two pipes), so benchmarks can report the fraction of what this core sustains.
#pragma once

#include <chrono>
#include <cstdint>

#include "kernels/amx_tiles.hpp"
#include "kernels/bf16_dot.hpp"
#include "kernels/bf16_products.hpp"
#include "kernels/simd.hpp"

namespace rfa {
namespace perf {

namespace detail {

/// Runs `step` (one FMA on each of 12 independent chains) many times; FLOP/s of the best run.
template <class Chains>
double best_flops(int lanes, Chains&& chains) {
  constexpr int kChains = 12;
  const long iterations = 20'000'000;
  double best = 0.0;
  for (int trial = 0; trial < 5; ++trial) {
    const auto t0 = std::chrono::steady_clock::now();
    chains(iterations);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double flops = 2.0 * lanes * kChains * double(iterations);
    if (flops / seconds > best) best = flops / seconds;
  }
  return best;
}

#if RFA_NATIVE_VECTORS && defined(__x86_64__)
/// Keeps the compiler from hoisting or collapsing a chain: its accumulator passes through an
/// empty asm in vector registers, one 256-bit register where the build targets AVX, its two
/// 128-bit halves otherwise (baseline x86-64 has no 256-bit register, and Clang refuses a
/// 32-byte operand for "x" there).
inline void keep_in_registers(simd::f8& acc) {
#if defined(__AVX__)
  asm volatile("" : "+x"(acc));
#else
  typedef float f4 __attribute__((vector_size(16)));
  f4 low, high;
  __builtin_memcpy(&low, &acc, sizeof low);
  __builtin_memcpy(&high, reinterpret_cast<const char*>(&acc) + sizeof low, sizeof high);
  asm volatile("" : "+x"(low), "+x"(high));
  __builtin_memcpy(&acc, &low, sizeof low);
  __builtin_memcpy(reinterpret_cast<char*>(&acc) + sizeof low, &high, sizeof high);
#endif
}
#endif

}  // namespace detail

/// Sustained fp32 FLOP/s of one core: FMA chains on the widest vectors the build targets (16
/// lanes where it targets AVX-512, as the kernels' matrix products then do, 8 otherwise), so a
/// kernel's fraction of it is a fraction of what the core can do (on a core with two 512-bit
/// FMA pipes, twice the 8-lane figure; where AVX-512 runs on 256-bit pipes, the two agree).
inline double measure_fp32_fma_peak() {
#if RFA_NATIVE_VECTORS && defined(__AVX512F__)
  typedef float f16v __attribute__((vector_size(64)));
  return detail::best_flops(16, [](long iterations) {
    f16v acc[12];
    for (int c = 0; c < 12; ++c) acc[c] = f16v{} + (1.0f + 1e-3f * c);
    const f16v a = f16v{} + 0.999999f, b = f16v{} + 1e-7f;
    for (long i = 0; i < iterations; ++i) {
      for (int c = 0; c < 12; ++c) acc[c] = acc[c] * a + b;
      // Keeps the compiler from hoisting or collapsing the chains.
      asm volatile(""
                   : "+v"(acc[0]), "+v"(acc[1]), "+v"(acc[2]), "+v"(acc[3]), "+v"(acc[4]), "+v"(acc[5]), "+v"(acc[6]),
                     "+v"(acc[7]), "+v"(acc[8]), "+v"(acc[9]), "+v"(acc[10]), "+v"(acc[11]));
    }
    volatile float sink = 0.0f;
    for (int c = 0; c < 12; ++c) sink = sink + acc[c][0];
  });
#else
  return detail::best_flops(simd::kLanes, [](long iterations) {
    simd::f8 acc[12];
    for (int c = 0; c < 12; ++c) acc[c] = simd::broadcast(1.0f + 1e-3f * c);
    const simd::f8 a = simd::broadcast(0.999999f), b = simd::broadcast(1e-7f);
    for (long i = 0; i < iterations; ++i) {
      for (int c = 0; c < 12; ++c) acc[c] = simd::fma(acc[c], a, b);
#if RFA_NATIVE_VECTORS && defined(__x86_64__)
      for (int c = 0; c < 12; ++c) detail::keep_in_registers(acc[c]);
#endif
    }
    volatile float sink = 0.0f;
    for (int c = 0; c < 12; ++c) sink = sink + simd::reduce_add(acc[c]);
  });
#endif
}

/// Sustained bf16 FLOP/s of one core's AMX tiles (tdpbf16ps on four independent accumulator
/// tiles, 2 * 16 * 16 * 32 FLOPs each), the peak of the bf16 kernels where they run on the
/// tiles; 0 where they do not (no AMX in the build, not granted, or RFA_HOST_AMX=0).
inline double measure_bf16_tile_peak() {
#if RFA_HOST_AMX
  if (!kernels::host_amx_bf16_enabled()) return 0.0;
  alignas(64) static std::uint16_t operand[16 * 32] = {};
  alignas(64) static float result[16 * 16];
  for (int i = 0; i < 16 * 32; ++i) operand[i] = std::uint16_t(0x3c00 + (i % 7));  // small normal values
  kernels::amx::configure_tiles();
  _tile_loadd(4, operand, 64);
  _tile_loadd(5, operand, 64);
  _tile_loadd(6, operand, 64);
  _tile_loadd(7, operand, 64);
  const long iterations = 1'000'000;
  double best = 0.0;
  for (int trial = 0; trial < 5; ++trial) {
    const auto t0 = std::chrono::steady_clock::now();
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    for (long i = 0; i < iterations; ++i) {
      _tile_dpbf16ps(0, 4, 6);
      _tile_dpbf16ps(1, 4, 7);
      _tile_dpbf16ps(2, 5, 6);
      _tile_dpbf16ps(3, 5, 7);
    }
    _tile_stored(0, result, 64);  // the sums are used, so the loop stays
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double flops = 4.0 * 2.0 * 16 * 16 * 32 * double(iterations);
    if (flops / seconds > best) best = flops / seconds;
  }
  _tile_release();
  return best;
#else
  return 0.0;
#endif
}

/// Sustained bf16 FLOP/s of one core's AVX512-BF16 dot products (vdpbf16ps on 12 independent
/// chains, 2 products of 2 FLOPs per fp32 lane), the peak of the bf16 kernels where they run on
/// them; 0 where they do not (no AVX512-BF16 in the build, or RFA_HOST_BF16_DOT=0).
inline double measure_bf16_dot_peak() {
#if RFA_HOST_BF16_PAIRS
  if (!kernels::host_bf16_dot_enabled()) return 0.0;
  return detail::best_flops(32, [](long iterations) {
    __m512 acc[12];
    for (int c = 0; c < 12; ++c) acc[c] = _mm512_set1_ps(1.0f + 1e-3f * c);
    // Small normal bf16 values (1/128 and 1/256 in pairs), so the sums stay far from overflow.
    __m512bh a, b;
    const __m512i a_bits = _mm512_set1_epi32(0x3c003c00), b_bits = _mm512_set1_epi32(0x3b803b80);
    __builtin_memcpy(&a, &a_bits, sizeof a);
    __builtin_memcpy(&b, &b_bits, sizeof b);
    for (long i = 0; i < iterations; ++i) {
      for (int c = 0; c < 12; ++c) acc[c] = _mm512_dpbf16_ps(acc[c], a, b);
      asm volatile(""
                   : "+v"(acc[0]), "+v"(acc[1]), "+v"(acc[2]), "+v"(acc[3]), "+v"(acc[4]), "+v"(acc[5]), "+v"(acc[6]),
                     "+v"(acc[7]), "+v"(acc[8]), "+v"(acc[9]), "+v"(acc[10]), "+v"(acc[11]));
    }
    volatile float sink = 0.0f;
    for (int c = 0; c < 12; ++c) sink = sink + _mm512_cvtss_f32(acc[c]);
  });
#else
  return 0.0;
#endif
}

/// The peak one core's host kernels run against: that of the bf16 products they run on where
/// they do (`products`: kernels::host_bf16_products for the shape, none for fp32), the fp32 FMA
/// peak otherwise.
inline double measure_core_peak(kernels::Bf16Products products) {
  switch (products) {
    case kernels::Bf16Products::amx_tiles: return measure_bf16_tile_peak();
    case kernels::Bf16Products::avx512_dot: return measure_bf16_dot_peak();
    default: return measure_fp32_fma_peak();
  }
}

}  // namespace perf
}  // namespace rfa
