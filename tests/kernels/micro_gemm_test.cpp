// SPDX-License-Identifier: BSD-3-Clause
// The register-blocked products of the host kernels (kernels/micro_gemm.hpp) on their own:
// both layouts of A and both updates of C against a double-precision product, an empty
// reduction, skipped blocks, after_tile() once per micro-tile as gemm_micro_tiles() counts, and
// the register hook seeing each computed block's accumulators as they are stored.
// Compiled per kernel build, so the portable lanes run the same cases.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <tuple>
#include <vector>

#include "kernels/micro_gemm.hpp"
#include "random_values.hpp"

namespace rfa {
namespace kernels {
namespace {

constexpr float kSentinel = -7.0f;

std::vector<float> random_values(std::size_t n, std::uint64_t seed) { return test::random_values<float>(n, seed); }

/// An M x K matrix A in both storages the products read, with padding between rows that holds
/// a sentinel: row-major with rows K + 3 apart, and transposed (A^T row-major) with rows
/// M + 5 apart.
struct BothLayouts {
  std::vector<float> rows, transposed;
  std::ptrdiff_t row_stride, inner_stride;
  BothLayouts(const std::vector<float>& a, int M, int K)
      : rows(std::size_t(M) * (K + 3), kSentinel),
        transposed(std::size_t(K) * (M + 5), kSentinel),
        row_stride(K + 3),
        inner_stride(M + 5) {
    for (int i = 0; i < M; ++i)
      for (int k = 0; k < K; ++k) rows[i * row_stride + k] = transposed[k * inner_stride + i] = a[i * K + k];
  }
};

template <Update kUpdate, class A>
void check_product(A a_stored, const std::vector<float>& a, int M, int N, int K, std::uint64_t seed) {
  const int ldb = N + 8, ldc = N + 4;
  const std::vector<float> b_values = random_values(std::size_t(K) * N, seed + 1);
  std::vector<float> b(std::size_t(K) * ldb, kSentinel);
  for (int k = 0; k < K; ++k)
    for (int j = 0; j < N; ++j) b[k * ldb + j] = b_values[k * N + j];
  std::vector<float> c = random_values(std::size_t(M) * ldc, seed + 2);
  for (int i = 0; i < M; ++i)
    for (int j = N; j < ldc; ++j) c[i * ldc + j] = kSentinel;
  const std::vector<float> c0 = c;

  gemm<kUpdate>(M, N, K, a_stored, b.data(), ldb, c.data(), ldc);

  for (int i = 0; i < M; ++i) {
    for (int j = 0; j < N; ++j) {
      double want = kUpdate == Update::accumulate ? double(c0[i * ldc + j]) : 0.0;
      double magnitude = std::fabs(want);
      for (int k = 0; k < K; ++k) {
        want += double(a[i * K + k]) * double(b_values[k * N + j]);
        magnitude += std::fabs(double(a[i * K + k]) * double(b_values[k * N + j]));
      }
      // fp32 accumulation of K + 1 terms: a few units in the last place of their magnitude.
      ASSERT_NEAR(c[i * ldc + j], want, 4e-7 * (K + 2) * magnitude + 1e-30)
          << "C[" << i << "][" << j << "] M=" << M << " N=" << N << " K=" << K;
    }
    for (int j = N; j < ldc; ++j) ASSERT_EQ(c[i * ldc + j], kSentinel) << "wrote past column N";
  }
}

TEST(Gemm, BothLayoutsAndBothUpdatesMatchADoubleProduct) {
  std::uint64_t seed = 1;
  for (int M : {6, 12, 18, 30})
    for (int N : {8, 16, 24, 40, 48})
      for (int K : {1, 2, 17, 96}) {
        const std::vector<float> a = random_values(std::size_t(M) * K, seed);
        const BothLayouts stored(a, M, K);
        const RowMajorA rows{stored.rows.data(), stored.row_stride};
        const TransposedA transposed{stored.transposed.data(), stored.inner_stride};
        check_product<Update::overwrite>(rows, a, M, N, K, seed);
        check_product<Update::accumulate>(rows, a, M, N, K, seed);
        check_product<Update::overwrite>(transposed, a, M, N, K, seed);
        check_product<Update::accumulate>(transposed, a, M, N, K, seed);
        seed += 3;
      }
}

TEST(Gemm, AnEmptyReductionZerosOrKeepsC) {
  const int M = 12, N = 24;
  std::vector<float> a(1, kSentinel), b(1, kSentinel);
  std::vector<float> c(std::size_t(M) * N, 3.0f);
  int calls = 0;
  gemm<Update::accumulate>(M, N, 0, RowMajorA{a.data(), 0}, b.data(), N, c.data(), N, [&] { ++calls; });
  for (float x : c) ASSERT_EQ(x, 3.0f);
  EXPECT_EQ(calls, gemm_micro_tiles(M, N));
  gemm<Update::overwrite>(M, N, 0, TransposedA{a.data(), 0}, b.data(), N, c.data(), N);
  for (float x : c) ASSERT_EQ(x, 0.0f);
}

TEST(Gemm, SkippedBlocksStayUnwrittenAndStillCountAsTiles) {
  const int M = 18, N = 40, K = 5;
  const std::vector<float> a = random_values(std::size_t(M) * K, 7);
  const std::vector<float> b = random_values(std::size_t(K) * N, 8);
  std::vector<float> c(std::size_t(M) * N, kSentinel);
  struct Block {
    int i0, i1, j0, j1;
  };
  std::vector<Block> skipped;
  int calls = 0, asked = 0;
  gemm<Update::overwrite>(
      M, N, K, RowMajorA{a.data(), K}, b.data(), N, c.data(), N, [&] { ++calls; },
      [&](int i0, int i1, int j0, int j1) {
        ++asked;
        // Blocks of 6 rows (12 where the build targets AVX-512) and 8, 16 or 32 columns.
        EXPECT_TRUE(i1 - i0 == kMicroRows || i1 - i0 == 2 * kMicroRows) << i1 - i0;
        EXPECT_TRUE(j1 - j0 == 8 || j1 - j0 == 16 || j1 - j0 == 32) << j1 - j0;
        const bool skip = i0 <= 6 && 6 < i1 && j0 == 0;  // the first strip's block holding row 6
        if (skip) skipped.push_back({i0, i1, j0, j1});
        return skip;
      });
  EXPECT_EQ(calls, gemm_micro_tiles(M, N));
  EXPECT_EQ(asked, calls);
  ASSERT_EQ(skipped.size(), 1u);
  const Block s = skipped[0];
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      if (i >= s.i0 && i < s.i1 && j >= s.j0 && j < s.j1) {
        ASSERT_EQ(c[i * N + j], kSentinel) << i << "," << j;
      } else {
        double want = 0.0;
        for (int k = 0; k < K; ++k) want += double(a[i * K + k]) * double(b[k * N + j]);
        ASSERT_NEAR(c[i * N + j], want, 1e-5) << i << "," << j;
      }
    }
}

TEST(Gemm, AfterTileRunsOncePerMicroTile) {
  for (int M : {6, 12, 18, 96, 192})
    for (int N : {8, 16, 24, 32, 40, 96, 128, 192}) {
      const int K = 3;
      std::vector<float> a(std::size_t(M) * K, 1.0f), b(std::size_t(K) * N, 2.0f), c(std::size_t(M) * N, 0.0f);
      int calls = 0;
      gemm<Update::overwrite>(M, N, K, RowMajorA{a.data(), K}, b.data(), N, c.data(), N, [&] { ++calls; });
      EXPECT_EQ(calls, gemm_micro_tiles(M, N)) << "M=" << M << " N=" << N;
      for (float x : c) ASSERT_EQ(x, 6.0f) << "M=" << M << " N=" << N;
    }
}

/// A register hook that copies every block it is shown into `seen` (N columns) and counts the
/// visits of each element.
struct RecordRegisters {
  std::vector<float>* seen;
  std::vector<int>* visits;
  int N;
  template <class V, int MR, int NV>
  void operator()(const V (&acc)[MR][NV], int i0, int j0) const {
    constexpr int L = int(sizeof(V) / sizeof(float));
    for (int r = 0; r < MR; ++r)
      for (int v = 0; v < NV; ++v) {
        float lanes[L];
        simd::store_as(lanes, acc[r][v]);
        for (int x = 0; x < L; ++x) {
          const std::size_t at = std::size_t(i0 + r) * N + j0 + L * v + x;
          (*seen)[at] = lanes[x];
          ++(*visits)[at];
        }
      }
  }
};

TEST(Gemm, RegisterHookSeesEveryComputedBlockAsItIsStored) {
  for (int N : {8, 24, 40, 96}) {
    const int M = 18, K = 7;
    const std::vector<float> a = random_values(std::size_t(M) * K, 11);
    const std::vector<float> b = random_values(std::size_t(K) * N, 12);
    std::vector<float> c = random_values(std::size_t(M) * N, 13), seen(std::size_t(M) * N, kSentinel);
    std::vector<int> visits(std::size_t(M) * N, 0);
    int skipped_i0 = -1, skipped_j0 = -1, skipped_i1 = -1, skipped_j1 = -1;
    gemm<Update::accumulate>(
        M, N, K, TransposedA{a.data(), M}, b.data(), N, c.data(), N, [] {},
        [&](int i0, int i1, int j0, int j1) {
          const bool skip = j0 == 0 && i0 == 0;  // the first block of the first strip
          if (skip) std::tie(skipped_i0, skipped_i1, skipped_j0, skipped_j1) = std::tie(i0, i1, j0, j1);
          return skip;
        },
        RecordRegisters{&seen, &visits, N});
    ASSERT_GE(skipped_i1, 0);
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        const std::size_t at = std::size_t(i) * N + j;
        const bool skipped = i >= skipped_i0 && i < skipped_i1 && j >= skipped_j0 && j < skipped_j1;
        ASSERT_EQ(visits[at], skipped ? 0 : 1) << "N=" << N << " at " << i << "," << j;
        // The same values; with the portable lanes (scalar loops) the compiler may contract the
        // last multiply-add differently in the hook's copy than in the store's, by a rounding.
        if (!skipped) {
          ASSERT_NEAR(seen[at], c[at], 1e-6f * (1.0f + std::fabs(c[at]))) << "N=" << N << " at " << i << "," << j;
        }
      }
  }
}

}  // namespace
}  // namespace kernels
}  // namespace rfa
