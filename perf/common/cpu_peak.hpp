// SPDX-License-Identifier: BSD-3-Clause
// The single-core fp32 FMA peak of this machine, measured rather than looked up: a loop of
// independent 8-wide FMA chains (enough of them to cover the FMA latency on two pipes), so
// benchmarks can report the fraction of what this core actually sustains.
#pragma once

#include <chrono>

#include "kernels/simd.hpp"

namespace rfa {
namespace perf {

/// Sustained fp32 FLOP/s of one core (best of a few short runs).
inline double measure_fp32_fma_peak() {
  constexpr int kChains = 12;
  const long iterations = 20'000'000;
  double best = 0.0;
  for (int trial = 0; trial < 5; ++trial) {
    simd::f8 acc[kChains];
    for (int c = 0; c < kChains; ++c) acc[c] = simd::broadcast(1.0f + 1e-3f * c);
    const simd::f8 a = simd::broadcast(0.999999f), b = simd::broadcast(1e-7f);
    const auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < iterations; ++i) {
      for (int c = 0; c < kChains; ++c) acc[c] = simd::fma(acc[c], a, b);
#if RFA_NATIVE_VECTORS && defined(__x86_64__)
      // Keeps the compiler from hoisting or collapsing the chains.
      asm volatile("" : "+x"(acc[0]), "+x"(acc[1]), "+x"(acc[2]), "+x"(acc[3]), "+x"(acc[4]), "+x"(acc[5]),
                   "+x"(acc[6]), "+x"(acc[7]), "+x"(acc[8]), "+x"(acc[9]), "+x"(acc[10]), "+x"(acc[11]));
#endif
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    volatile float sink = 0.0f;
    for (int c = 0; c < kChains; ++c) sink = sink + simd::reduce_add(acc[c]);
    const double flops = 2.0 * simd::kLanes * kChains * double(iterations);
    if (flops / seconds > best) best = flops / seconds;
  }
  return best;
}

/// FlashAttention's FLOP convention (docs/architecture.md §3): forward 4 B S_q S_k H d, halved when
/// causal (for S_q == S_k); backward 2.5x the forward.
inline double attention_flops(double batch, double seq_q, double seq_k, double heads, double head_dim,
                              bool causal, bool backward) {
  double f = 4.0 * batch * seq_q * seq_k * heads * head_dim;
  if (causal) f *= 0.5;
  if (backward) f *= 2.5;
  return f;
}

}  // namespace perf
}  // namespace rfa
