// SPDX-License-Identifier: BSD-3-Clause
// Forward kernel against the float64 reference, for every dtype and output mode.
#include <gtest/gtest.h>

#include "kernel_case.hpp"

namespace rfa {
namespace test {
namespace {

template <class T, class TOut>
void run_forward_case(const CaseSpec& c, std::uint64_t seed, double out_tolerance = tolerance<TOut>(),
                      bool fp32_accurate_partials = true) {
  SCOPED_TRACE(c.name() + " dtype=" + dtype_name(dtype_of<T>::value) + " out=" + dtype_name(dtype_of<TOut>::value));
  std::mt19937_64 rng(seed);
  std::vector<double> q64, k64, v64;
  auto q = random_tensor<T>("q", c.batch, c.seq_q, c.heads, c.head_dim, rng, q64, 2.0);
  auto k = random_tensor<T>("k", c.batch, c.seq_k, c.kv_heads, c.head_dim, rng, k64, 2.0);
  auto v = random_tensor<T>("v", c.batch, c.seq_k, c.kv_heads, c.dv(), rng, v64);
  Tensor4<TOut> out("out", c.batch, c.seq_q, c.heads, c.dv());
  Tensor3<float> lse("lse", c.batch, c.heads, c.seq_q);
  poison(out);
  poison(lse);

  kernels::AttentionParams p = c.params();
  p.fp32_accurate_partials = fp32_accurate_partials;
  {
    const TrappedFloatingPointExceptions trapped;
    kernels::flash_forward<T, TOut>(p, q, k, v, out, lse);
  }

  std::vector<double> out_ref, lse_ref;
  reference::forward(c.problem(), q64, k64, v64, out_ref, lse_ref);
  RFA_EXPECT_CLOSE(to_doubles(out), out_ref, out_tolerance, "out");
  RFA_EXPECT_CLOSE(to_doubles(lse), lse_ref, 2e-5, "lse");
}

class ForwardTest : public ::testing::TestWithParam<CaseSpec> {};

TEST_P(ForwardTest, Float32) { run_forward_case<float, float>(GetParam(), 1); }
TEST_P(ForwardTest, BFloat16) { run_forward_case<bf16_t, bf16_t>(GetParam(), 2); }
TEST_P(ForwardTest, Float16) { run_forward_case<fp16_t, fp16_t>(GetParam(), 3); }
TEST_P(ForwardTest, BFloat16WithFloat32Partial) { run_forward_case<bf16_t, float>(GetParam(), 4); }
TEST_P(ForwardTest, Float16WithFloat32Partial) { run_forward_case<fp16_t, float>(GetParam(), 5); }
// Partials of a 16-bit result (the ring's, for bf16 and fp16 contexts): within the bound of a
// 16-bit output, which they are rounded to in the end.
TEST_P(ForwardTest, BFloat16WithRoundedPartial) {
  run_forward_case<bf16_t, float>(GetParam(), 6, tolerance<bf16_t>(), false);
}

INSTANTIATE_TEST_SUITE_P(Shapes, ForwardTest, ::testing::ValuesIn(kernel_cases()),
                         [](const auto& info) { return info.param.name() + "_" + std::to_string(info.index); });

// Logits in the thousands must neither overflow nor lose the result: the online softmax
// subtracts the running max. fp32 scores of magnitude ~2000 carry an absolute rounding error
// of ~1e-4 in the exponent, so the bound here reflects the conditioning, not the kernel.
TEST(ForwardStability, LargeScoresStayFinite) {
  CaseSpec c{1, 150, 150, 1, 1, 32, RFA_MASK_CAUSAL, {}, {}};
  c.scale = 40.0f;
  run_forward_case<float, float>(c, 11, 5e-4);
}

// Scores near the ends of fp32's range, which the options accept (a scale up to 2.36e38, any
// soft cap). Every query sees every key whose score is finite, however far below zero (a
// running max below -2e38 was once taken for "no key seen": out 0, lse -inf); a row's largest
// score gets the weight it has, the scores scaled once (the bf16 products' forward scaled them
// twice, once fused into the exponent's subtraction: from scores of about 1e7 on the max's
// weight was a power of two, 0 or inf); a capped score is capped whatever its size before the
// cap (scale * q past fp32's range overflowed the portable path's scaled queries, flipping or
// flattening the capped scores). Floating-point traps stay off: these scores overflow on the
// way by design. q is `q_rest` but for its first element, `q_first`; k and v are random, k's first
// element put in [1, 3] with `keys_positive` (every score then has q_first's sign), the
// first key's 1.
template <class T>
void run_extreme_case(const CaseSpec& c, float q_first, float q_rest, bool keys_positive, std::uint64_t seed) {
  SCOPED_TRACE(c.name() + " dtype=" + dtype_name(dtype_of<T>::value) + " scale=" + std::to_string(c.scale));
  std::mt19937_64 rng(seed);
  std::vector<double> q64, k64, v64;
  auto q = random_tensor<T>("q", c.batch, c.seq_q, c.heads, c.head_dim, rng, q64);
  for (std::size_t i = 0; i < q.size(); ++i) {
    q.data()[i] = from_float<T>(i % std::size_t(c.head_dim) == 0 ? q_first : q_rest);
    q64[i] = to_float(q.data()[i]);
  }
  auto k = random_tensor<T>("k", c.batch, c.seq_k, c.kv_heads, c.head_dim, rng, k64, 2.0);
  if (keys_positive) {
    for (std::size_t i = 0; i < k.size(); i += std::size_t(c.head_dim)) {
      k.data()[i] = from_float<T>(std::fabs(to_float(k.data()[i])) + 1.0f);
      k64[i] = to_float(k.data()[i]);
    }
    // The first key's is 1: every row (the causal mask's first too) sees a key whose score,
    // q_first * scale, fp32 holds, and each other is at or below it.
    for (std::int64_t b = 0; b < c.batch; ++b) {
      for (std::int64_t h = 0; h < c.kv_heads; ++h) {
        const std::size_t first = std::size_t((b * c.seq_k * c.kv_heads + h) * c.head_dim);
        k.data()[first] = from_float<T>(1.0f);
        k64[first] = 1.0;
      }
    }
  }
  auto v = random_tensor<T>("v", c.batch, c.seq_k, c.kv_heads, c.dv(), rng, v64);
  Tensor4<float> out("out", c.batch, c.seq_q, c.heads, c.dv());
  Tensor3<float> lse("lse", c.batch, c.heads, c.seq_q);
  poison(out);
  poison(lse);
  kernels::flash_forward<T, float>(c.params(), q, k, v, out, lse);
  std::vector<double> out_ref, lse_ref;
  reference::forward(c.problem(), q64, k64, v64, out_ref, lse_ref);
  RFA_EXPECT_CLOSE(to_doubles(out), out_ref, 1e-4, "out");
  RFA_EXPECT_CLOSE(to_doubles(lse), lse_ref, 1e-5, "lse");
}

TEST(ForwardExtremes, ScoresFarFromZeroAreWeighedAsThemselves) {
  for (const float scale : {1e20f, 2.0e37f, 1.1e38f}) {
    for (rfa_mask_t mask : {RFA_MASK_NONE, RFA_MASK_CAUSAL}) {
      CaseSpec c{1, 40, 40, 1, 1, 32, mask, {}, {}};
      c.scale = scale;
      // Every score at most -2 scale: at 1.1e38 a row's max is below -3e38 in the log2 domain
      // (scale * log2 e * q_0 stays within fp32).
      run_extreme_case<float>(c, -2.0f, 0.0f, true, 41);
      run_extreme_case<bf16_t>(c, -2.0f, 0.0f, true, 42);
      run_extreme_case<float>(c, -1.0f, 0.0f, false, 43);  // scores of either sign
      run_extreme_case<bf16_t>(c, -1.0f, 0.0f, false, 44);
    }
  }
}

TEST(ForwardExtremes, CappedScoresPastFp32AreCapped) {
  // q = 2 everywhere: scale * q = 4e38 overflows fp32, and so would scale * log2 e * q_x * k_x
  // of either sign (inf - inf: NaN); scale * q.k does for most keys. Capped, every score is
  // +-softcap or near it.
  for (const float cap : {30.0f, 0.7f}) {
    CaseSpec c{1, 40, 40, 1, 1, 32, RFA_MASK_CAUSAL, {}, {}};
    c.scale = 2.0e38f;
    c.softcap = cap;
    run_extreme_case<float>(c, 2.0f, 2.0f, false, 45);
    run_extreme_case<fp16_t>(c, 2.0f, 2.0f, false, 46);
    run_extreme_case<bf16_t>(c, 2.0f, 2.0f, false, 47);
  }
  // A tiny cap: scale / softcap = 2.5e29 multiplies each product inside tanh.
  CaseSpec c{1, 40, 40, 1, 1, 32, RFA_MASK_NONE, {}, {}};
  c.scale = 0.25f;
  c.softcap = 1e-30f;
  run_extreme_case<float>(c, 1.0f, 0.5f, false, 48);
}

// One workspace kept across calls of every shape (needs that grow and shrink, masks that hide
// key tiles): each call's results are bit for bit those of a call with its own buffers, so
// nothing a call leaves in the workspace reaches the next.
TEST(ForwardWorkspace, SharedAcrossShapesChangesNothing) {
  kernels::ForwardWorkspace workspace;
  std::uint64_t seed = 21;
  for (const CaseSpec& c : kernel_cases()) {
    SCOPED_TRACE(c.name());
    std::mt19937_64 rng(seed++);
    std::vector<double> q64, k64, v64;
    auto q = random_tensor<float>("q", c.batch, c.seq_q, c.heads, c.head_dim, rng, q64, 2.0);
    auto k = random_tensor<float>("k", c.batch, c.seq_k, c.kv_heads, c.head_dim, rng, k64, 2.0);
    auto v = random_tensor<float>("v", c.batch, c.seq_k, c.kv_heads, c.dv(), rng, v64);
    Tensor4<float> own_out("own_out", c.batch, c.seq_q, c.heads, c.dv());
    Tensor4<float> shared_out("shared_out", c.batch, c.seq_q, c.heads, c.dv());
    Tensor3<float> own_lse("own_lse", c.batch, c.heads, c.seq_q), shared_lse("shared_lse", c.batch, c.heads, c.seq_q);
    poison(shared_out);
    poison(shared_lse);
    kernels::flash_forward<float, float>(c.params(), q, k, v, own_out, own_lse);
    kernels::flash_forward<float, float>(c.params(), q, k, v, shared_out, shared_lse, kernels::ProgressHook(),
                                         &workspace);
    EXPECT_EQ(to_doubles(shared_out), to_doubles(own_out));
    EXPECT_EQ(to_doubles(shared_lse), to_doubles(own_lse));
  }
  EXPECT_GT(workspace.k.extent(0), 0u) << "the portable forward kept nothing in the workspace";
}

}  // namespace
}  // namespace test
}  // namespace rfa
