// SPDX-License-Identifier: BSD-3-Clause
// The AVX512-BF16 product against a float64 reference: one to four column blocks and row blocks
// (N, M = 32 .. 128), reductions of 32 to 128, overwrite and accumulate, and the second terms of
// A or of B.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/bf16_dot.hpp"

namespace rfa {
namespace kernels {
namespace {

struct GemmCase {
  int M, N, K;
  bool accumulate, a_lo, b_lo;
};

#if RFA_HOST_BF16_PAIRS
std::uint16_t to_bf16(float x) {  // nearest even; the test's values are finite
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return std::uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
double from_bf16(std::uint16_t h) {
  const std::uint32_t u = std::uint32_t(h) << 16;
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

struct Operand {
  std::vector<std::uint16_t> hi, lo;  // lo empty: one term
  double at(std::size_t i) const { return from_bf16(hi[i]) + (lo.empty() ? 0.0 : from_bf16(lo[i])); }
};

/// Values x in [-1, 1] as hi + lo (the lo term a small remainder, as the kernels' splits give).
Operand random_operand(std::size_t n, bool two_terms, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  Operand o;
  for (std::size_t i = 0; i < n; ++i) {
    const float x = dist(rng);
    o.hi.push_back(to_bf16(x));
    if (two_terms) o.lo.push_back(to_bf16(x - float(from_bf16(o.hi.back()))));
  }
  return o;
}

void run_gemm_case(const GemmCase& g) {
  SCOPED_TRACE(::testing::Message() << "M=" << g.M << " N=" << g.N << " K=" << g.K << " accumulate=" << g.accumulate
                                    << " a_lo=" << g.a_lo << " b_lo=" << g.b_lo);
  std::mt19937_64 rng(std::uint64_t(g.M) * 7919 + g.N * 131 + g.K + (g.accumulate ? 1 : 0));
  const std::size_t lda = std::size_t(g.K) + 32, ldc = std::size_t(g.N) + 16;  // rows with gaps
  const Operand a = random_operand(std::size_t(g.M) * lda, g.a_lo, rng);
  const Operand b = random_operand(std::size_t(g.K) * g.N, g.b_lo, rng);  // B[k][n], row-major
  // B in pairs along K: row k/2 holds (B[k][n], B[k+1][n]) for every n.
  Operand pairs_b = b;
  for (int k = 0; k < g.K; ++k)
    for (int n = 0; n < g.N; ++n) {
      const std::size_t from = std::size_t(k) * g.N + n, to = std::size_t(k / 2) * 2 * g.N + 2 * n + k % 2;
      pairs_b.hi[to] = b.hi[from];
      if (g.b_lo) pairs_b.lo[to] = b.lo[from];
    }
  std::vector<float> c(std::size_t(g.M) * ldc, std::nanf(""));
  std::vector<double> prior(c.size(), 0.0);
  if (g.accumulate) {
    std::uniform_real_distribution<float> dist(-4.0f, 4.0f);
    for (std::size_t i = 0; i < c.size(); ++i) prior[i] = c[i] = dist(rng);
  }
  dot::gemm(g.M, g.N, g.K, {a.hi.data(), g.a_lo ? a.lo.data() : nullptr, lda},
            {pairs_b.hi.data(), g.b_lo ? pairs_b.lo.data() : nullptr, 2 * std::size_t(g.N)}, c.data(), ldc,
            g.accumulate);
  double worst = 0.0;
  for (int i = 0; i < g.M; ++i)
    for (int n = 0; n < g.N; ++n) {
      // Without the lo x lo term, which the product leaves out (below fp32's resolution).
      double ref = prior[i * ldc + n], scale = std::fabs(ref);
      for (int k = 0; k < g.K; ++k) {
        const double ah = from_bf16(a.hi[i * lda + k]), bh = from_bf16(b.hi[std::size_t(k) * g.N + n]);
        const double al = g.a_lo ? from_bf16(a.lo[i * lda + k]) : 0.0;
        const double bl = g.b_lo ? from_bf16(b.lo[std::size_t(k) * g.N + n]) : 0.0;
        const double term = ah * bh + al * bh + ah * bl;
        ref += term;
        scale += std::fabs(term);
      }
      // fp32 sums: a few units of 2^-24 of the summed magnitudes; NaN (an element never
      // written: C starts as NaN) as an infinite error, which std::max would skip.
      const double err = std::fabs(c[i * ldc + n] - ref) / (scale * 0x1p-24);
      worst = std::isnan(err) ? INFINITY : std::max(worst, err);
    }
  // (A product that dropped a second term would be off by about 2^-9 of it: 2^15 units.)
  EXPECT_LT(worst, 8.0) << "error in units of 2^-24 of the summed magnitudes";
  // Columns between rows of C (the gap up to ldc) are not touched.
  if (!g.accumulate) {
    for (int i = 0; i < g.M; ++i)
      for (std::size_t n = g.N; n < ldc; ++n) EXPECT_TRUE(std::isnan(c[i * ldc + n])) << "row " << i << " column " << n;
  }
}
#else
void run_gemm_case(const GemmCase&) { GTEST_SKIP() << "this build does not target AVX512-BF16"; }
#endif

TEST(Bf16Dot, MatchesFloat64Reference) {
  for (const GemmCase& g : {GemmCase{96, 128, 128, false, false, false}, GemmCase{32, 64, 32, false, false, false},
                            GemmCase{64, 32, 96, true, false, false}, GemmCase{128, 96, 64, true, false, false}})
    run_gemm_case(g);
}

TEST(Bf16Dot, SecondTermsOfAOrB) {
  for (const GemmCase& g : {GemmCase{96, 64, 128, false, true, false}, GemmCase{64, 128, 32, true, true, false},
                            GemmCase{32, 96, 128, false, false, true}, GemmCase{128, 32, 64, true, false, true}})
    run_gemm_case(g);
}

}  // namespace
}  // namespace kernels
}  // namespace rfa
