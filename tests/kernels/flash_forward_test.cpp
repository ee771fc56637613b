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
