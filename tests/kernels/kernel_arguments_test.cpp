// SPDX-License-Identifier: BSD-3-Clause
// Bad arguments to the kernels are rejected with a code and a message naming the problem.
#include <gtest/gtest.h>

#include <cstring>

#include "core/error.hpp"
#include "kernel_case.hpp"

namespace rfa {
namespace test {
namespace {

struct Buffers {
  Tensor4<float> q, k, v, out;
  Tensor3<float> lse;
  explicit Buffers(const kernels::AttentionParams& p)
      : q("q", p.batch, p.seq_q, p.heads, p.head_dim),
        k("k", p.batch, p.seq_k, p.kv_heads, p.head_dim),
        v("v", p.batch, p.seq_k, p.kv_heads, p.head_dim),
        out("out", p.batch, p.seq_q, p.heads, p.head_dim),
        lse("lse", p.batch, p.heads, p.seq_q) {}
};

/// Runs the forward with the given params and buffers; returns the error it raised.
Error forward_error(const kernels::AttentionParams& p, const Buffers& b) {
  try {
    kernels::flash_forward<float, float>(p, b.q, b.k, b.v, b.out, b.lse);
  } catch (const Error& e) {
    return e;
  }
  return Error(RFA_SUCCESS, "");
}

void expect_rejected(const kernels::AttentionParams& p, const Buffers& b, rfa_result_t code, const std::string& words) {
  const Error e = forward_error(p, b);
  EXPECT_EQ(e.code(), code) << e.what();
  EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << "message: " << e.what();
}

kernels::AttentionParams good() { return kernels::make_params(1, 16, 16, 4, 2, 32, RFA_MASK_CAUSAL); }

TEST(KernelArguments, GoodParamsRun) {
  const auto p = good();
  Buffers b(p);
  EXPECT_EQ(forward_error(p, b).code(), RFA_SUCCESS);
}

TEST(KernelArguments, HeadsNotMultipleOfKvHeads) {
  auto p = good();
  p.kv_heads = 3;
  Buffers b(good());
  expect_rejected(p, b, RFA_ERROR_INVALID_ARGUMENT, "multiple of kv_heads");
}

TEST(KernelArguments, UnsupportedHeadDims) {
  for (std::int64_t d : {0, 4, 12, 264, 512}) {
    auto p = good();
    p.head_dim = d;
    Buffers b(good());
    expect_rejected(p, b, RFA_ERROR_UNSUPPORTED, "head_dim " + std::to_string(d));
  }
}

TEST(KernelArguments, NonPositiveSizes) {
  auto p = good();
  p.seq_q = 0;
  expect_rejected(p, Buffers(good()), RFA_ERROR_INVALID_ARGUMENT, "seq_q must be >= 1");
  p = good();
  p.batch = -1;
  expect_rejected(p, Buffers(good()), RFA_ERROR_INVALID_ARGUMENT, "batch must be >= 1");
}

TEST(KernelArguments, MismatchedShapesNameTheTensor) {
  const auto p = good();
  Buffers b(p);
  b.k = Tensor4<float>("k", 1, 15, 2, 32);
  expect_rejected(p, b, RFA_ERROR_INVALID_ARGUMENT, "tensor 'k' has shape [1,15,2,32], expected [1,16,2,32]");
  Buffers c(p);
  c.lse = Tensor3<float>("lse", 1, 16, 4);
  expect_rejected(p, c, RFA_ERROR_INVALID_ARGUMENT, "tensor 'lse'");
}

TEST(KernelArguments, NullData) {
  const auto p = good();
  Buffers b(p);
  b.v = Tensor4<float>(static_cast<float*>(nullptr), 1, 16, 2, 32);
  expect_rejected(p, b, RFA_ERROR_INVALID_ARGUMENT, "tensor 'v' has no data");
}

TEST(KernelArguments, BadPositionMaps) {
  auto p = good();
  p.q_pos = PositionMap::contiguous(0, 15);
  expect_rejected(p, Buffers(good()), RFA_ERROR_INVALID_ARGUMENT, "covers 15 rows but the tensor has 16");
  p = good();
  p.k_pos = PositionMap::one({0, 0, 16});
  expect_rejected(p, Buffers(good()), RFA_ERROR_INVALID_ARGUMENT, "stride 0");
  // Segments whose lengths add up to the rows, one of them negative: 17 - 1 = 16.
  p = good();
  p.k_pos = PositionMap::two({0, 1, 17}, {100, 1, -1});
  expect_rejected(p, Buffers(good()), RFA_ERROR_INVALID_ARGUMENT, "segment 1 has negative length -1");
  p = good();
  p.q_pos = PositionMap::one({-1, 1, 16});
  expect_rejected(p, Buffers(good()), RFA_ERROR_INVALID_ARGUMENT, "starts at negative position -1");
}

TEST(KernelArguments, BadScaleAndMask) {
  auto p = good();
  p.softmax_scale = -1.0f;
  expect_rejected(p, Buffers(good()), RFA_ERROR_INVALID_ARGUMENT, "softmax_scale");
  p = good();
  const int seven = 7;  // as a C caller could pass it; a C++ cast to the enum would be UB
  std::memcpy(&p.mask, &seven, sizeof seven);
  expect_rejected(p, Buffers(good()), RFA_ERROR_INVALID_ARGUMENT, "unknown mask");
}

TEST(KernelArguments, BackwardChecksGradientShapes) {
  const auto p = good();
  Buffers b(p);
  Tensor4<float> dq("dq", 1, 16, 4, 32), dk("dk", 1, 16, 2, 32), dv("dv", 1, 16, 4, 32);
  try {
    kernels::flash_backward<float>(p, b.q, b.k, b.v, b.out, b.q, b.lse, dq, dk, dv);
    FAIL() << "accepted a dv of the wrong shape";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), RFA_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("tensor 'dv'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace test
}  // namespace rfa
