// SPDX-License-Identifier: BSD-3-Clause
// Backward kernels against the float64 reference: the self-contained call writing gradients
// in the storage dtype, and the accumulating fp32 mode the ring uses.
#include <gtest/gtest.h>

#include <tuple>

#include "kernel_case.hpp"
#include "kernels/bf16_products.hpp"

namespace rfa {
namespace test {
namespace {

struct BackwardInputs {
  std::vector<double> q64, k64, v64, dout64, out_ref, lse_ref, dq_ref, dk_ref, dv_ref;
};

/// `key_tile_splits`: AttentionParams::key_tile_splits (0: the kernels' own choice).
template <class T>
void run_backward_case(const CaseSpec& c, std::uint64_t seed, int key_tile_splits = 0) {
  SCOPED_TRACE(c.name() + " dtype=" + dtype_name(dtype_of<T>::value) + " key tile splits " +
               std::to_string(key_tile_splits));
  std::mt19937_64 rng(seed);
  BackwardInputs in;
  auto q = random_tensor<T>("q", c.batch, c.seq_q, c.heads, c.head_dim, rng, in.q64, 2.0);
  auto k = random_tensor<T>("k", c.batch, c.seq_k, c.kv_heads, c.head_dim, rng, in.k64, 2.0);
  auto v = random_tensor<T>("v", c.batch, c.seq_k, c.kv_heads, c.dv(), rng, in.v64);
  auto dout = random_tensor<T>("dout", c.batch, c.seq_q, c.heads, c.dv(), rng, in.dout64);
  Tensor4<T> out("out", c.batch, c.seq_q, c.heads, c.dv());
  Tensor3<float> lse("lse", c.batch, c.heads, c.seq_q);
  kernels::AttentionParams params = c.params();
  params.key_tile_splits = key_tile_splits;
  Tensor4<T> dq("dq", c.batch, c.seq_q, c.heads, c.head_dim);
  Tensor4<T> dk("dk", c.batch, c.seq_k, c.kv_heads, c.head_dim);
  Tensor4<T> dv("dv", c.batch, c.seq_k, c.kv_heads, c.dv());
  poison(dq);
  poison(dk);
  poison(dv);
  {
    const TrappedFloatingPointExceptions trapped;
    kernels::flash_forward<T, T>(params, q, k, v, out, lse);
    kernels::flash_backward<T>(params, q, k, v, out, dout, lse, dq, dk, dv);
  }

  reference::backward(c.problem(), in.q64, in.k64, in.v64, in.dout64, in.dq_ref, in.dk_ref, in.dv_ref);
  // Gradients go through one more rounding (of out) than the forward, hence the factor 2.
  const double tol = 2 * tolerance<T>();
  RFA_EXPECT_CLOSE(to_doubles(dq), in.dq_ref, tol, "dq");
  RFA_EXPECT_CLOSE(to_doubles(dk), in.dk_ref, tol, "dk");
  RFA_EXPECT_CLOSE(to_doubles(dv), in.dv_ref, tol, "dv");
}

class BackwardTest : public ::testing::TestWithParam<CaseSpec> {};

TEST_P(BackwardTest, Float32) { run_backward_case<float>(GetParam(), 21); }
TEST_P(BackwardTest, BFloat16) { run_backward_case<bf16_t>(GetParam(), 22); }
TEST_P(BackwardTest, Float16) { run_backward_case<fp16_t>(GetParam(), 23); }

INSTANTIATE_TEST_SUITE_P(Shapes, BackwardTest, ::testing::ValuesIn(kernel_cases()),
                         [](const auto& info) { return info.param.name() + "_" + std::to_string(info.index); });

// Where the (batch, kv head) units cannot keep every host thread busy, the backward splits each
// unit's key tiles among teams that add their dQ shares atomically (kernels/league_chunks.hpp).
// A one-thread build never chooses that, so these cases ask for it: splits that divide the key
// tiles, that leave a remainder, and more splits than tiles, with key lengths on and one past a
// multiple of the backward's 192-key tile, and masks that leave some teams nothing to do.
TEST(BackwardKeyTileSplits, EverySplitGivesTheReferenceGradients) {
  std::uint64_t seed = 41;
  for (const std::int64_t seq_k : {std::int64_t(100), std::int64_t(3 * 192), std::int64_t(5 * 192 + 1)}) {
    for (const int splits : {2, 3, 7}) {
      CaseSpec full{1, 70, seq_k, 4, 2, 32, RFA_MASK_NONE, {}, {}};
      CaseSpec causal{2, 97, seq_k, 2, 1, 32, RFA_MASK_CAUSAL, PositionMap::contiguous(seq_k - 97, 97), {}};
      CaseSpec window = causal;
      window.window = 300;
      for (const CaseSpec& c : {full, causal, window}) {
        run_backward_case<float>(c, seed, splits);
        run_backward_case<bf16_t>(c, seed + 1, splits);
        seed += 2;
      }
    }
  }
  // What the teams' shares must also respect: documents per batch entry (one entry's key tiles
  // hidden where another's are seen), a zigzag-like map, V's own head dim and ranges; key lengths
  // past two 192-key tiles by a part (512) and by one (385).
  for (const std::int64_t seq_k : {std::int64_t(512), std::int64_t(2 * 192 + 1)}) {
    CaseSpec entries{1, 64, seq_k, 4, 2, 32, RFA_MASK_CAUSAL, PositionMap::contiguous(seq_k - 64, 64), {}};
    entries.batch = 2;
    const reference::DocumentLists lists = reference::pack_document_lists({{0, 150, seq_k}, {0, seq_k - 70, seq_k}});
    entries.docs = lists.bounds;
    entries.doc_offsets = lists.offsets;
    CaseSpec zigzag{1,
                    100,
                    seq_k,
                    2,
                    1,
                    32,
                    RFA_MASK_CAUSAL,
                    PositionMap::two({50, 1, 50}, {seq_k + 100, 1, 50}),
                    PositionMap::contiguous(0, seq_k)};
    zigzag.window = 200;
    CaseSpec split_dims{1, 70, seq_k, 2, 1, 64, RFA_MASK_NONE, {}, {}};
    split_dims.value_dim = 32;
    CaseSpec ranged{1, 70, seq_k, 2, 2, 32, RFA_MASK_RANGES, {}, {}};
    const std::vector<rfa_mask_range_t> list = {{0, 70, 0, 60, 0, 0, RFA_RANGE_FULL},
                                                {0, 70, 190, 300, 0, 0, RFA_RANGE_FULL}};
    ranged.ranges = std::make_shared<const MaskRanges>(list.data(), std::int64_t(list.size()), seq_k, "ranges");
    for (const CaseSpec& c : {entries, zigzag, split_dims, ranged})
      for (const int splits : {2, 3}) {
        run_backward_case<float>(c, seed, splits);
        run_backward_case<bf16_t>(c, seed + 1, splits);
        seed += 2;
      }
  }
}

// Scores far past a soft cap (s / softcap from 9 to 14): tanh is 1 in fp32 and every key weighs
// the same, yet the gradients through the cap are not 0 but 4 exp(-2 s / softcap) of what they
// would be uncapped (1e-8 to 1e-12): a slope taken as 1 - t^2 would make dQ and dK 0. q is 9 in its
// first element and 0 elsewhere, k's first element in [1, 14/9]; the comparison is to the largest
// reference value with no floor (the shapes' own floor of 1e-2 would take 0 for these). fp16 is
// left out: such gradients lie below its subnormals.
template <class T>
void run_saturated_cap_case(const CaseSpec& c, std::uint64_t seed) {
  SCOPED_TRACE(c.name() + " dtype=" + dtype_name(dtype_of<T>::value));
  std::mt19937_64 rng(seed);
  BackwardInputs in;
  auto q = random_tensor<T>("q", c.batch, c.seq_q, c.heads, c.head_dim, rng, in.q64);
  for (std::size_t i = 0; i < q.size(); ++i) {
    q.data()[i] = from_float<T>(i % std::size_t(c.head_dim) == 0 ? 9.0f : 0.0f);
    in.q64[i] = to_float(q.data()[i]);
  }
  auto k = random_tensor<T>("k", c.batch, c.seq_k, c.kv_heads, c.head_dim, rng, in.k64, 2.0);
  std::uniform_real_distribution<double> first(1.0, 14.0 / 9.0);
  for (std::size_t i = 0; i < k.size(); i += std::size_t(c.head_dim)) {
    k.data()[i] = from_float<T>(float(first(rng)));
    in.k64[i] = to_float(k.data()[i]);
  }
  auto v = random_tensor<T>("v", c.batch, c.seq_k, c.kv_heads, c.dv(), rng, in.v64);
  auto dout = random_tensor<T>("dout", c.batch, c.seq_q, c.heads, c.dv(), rng, in.dout64);
  Tensor4<T> out("out", c.batch, c.seq_q, c.heads, c.dv());
  Tensor3<float> lse("lse", c.batch, c.heads, c.seq_q);
  Tensor4<T> dq("dq", c.batch, c.seq_q, c.heads, c.head_dim);
  Tensor4<T> dk("dk", c.batch, c.seq_k, c.kv_heads, c.head_dim);
  Tensor4<T> dv("dv", c.batch, c.seq_k, c.kv_heads, c.dv());
  {
    const TrappedFloatingPointExceptions trapped;
    kernels::flash_forward<T, T>(c.params(), q, k, v, out, lse);
    kernels::flash_backward<T>(c.params(), q, k, v, out, dout, lse, dq, dk, dv);
  }
  reference::backward(c.problem(), in.q64, in.k64, in.v64, in.dout64, in.dq_ref, in.dk_ref, in.dv_ref);
  const double tol = 2 * tolerance<T>();
  for (const auto& [got, ref, what] :
       {std::make_tuple(to_doubles(dq), in.dq_ref, "dq"), std::make_tuple(to_doubles(dk), in.dk_ref, "dk")}) {
    const Comparison cmp = compare(got, ref);
    ASSERT_GT(cmp.max_abs_ref, 0.0) << what;
    EXPECT_EQ(cmp.nans, 0u) << what;
    EXPECT_LE(cmp.max_abs_error / cmp.max_abs_ref, tol)
        << what << ": max abs error " << cmp.max_abs_error << " vs max |ref| " << cmp.max_abs_ref;
  }
  RFA_EXPECT_CLOSE(to_doubles(dv), in.dv_ref, tol, "dv");
}

TEST(BackwardSaturatedCap, GradientsPastTheCapKeepTheirDigits) {
  std::uint64_t seed = 61;
  for (const std::int64_t seq : {40, 200})
    for (const rfa_mask_t mask : {RFA_MASK_NONE, RFA_MASK_CAUSAL}) {
      CaseSpec c{1, seq, seq, 2, 1, 32, mask, {}, {}};
      c.scale = 1.0f;
      c.softcap = 1.0f;
      run_saturated_cap_case<float>(c, seed++);
      run_saturated_cap_case<bf16_t>(c, seed++);
    }
}

// One workspace kept across calls of every shape (growing and shrinking, GQA, masks): each
// call's gradients are bit for bit those of a call with its own buffers, so nothing a call
// leaves in the workspace (a longer sequence's rows past this one's end) reaches the next.
// Both calls are deterministic: with several threads the default mode may split a head's key
// tiles between them and add dQ atomically, in an order that differs from call to call.
TEST(BackwardWorkspace, SharedAcrossShapesChangesNothing) {
  kernels::BackwardWorkspace workspace;
  std::uint64_t seed = 31;
  for (const CaseSpec& c : kernel_cases()) {
    SCOPED_TRACE(c.name());
    std::mt19937_64 rng(seed++);
    std::vector<double> q64, k64, v64, do64;
    auto q = random_tensor<float>("q", c.batch, c.seq_q, c.heads, c.head_dim, rng, q64, 2.0);
    auto k = random_tensor<float>("k", c.batch, c.seq_k, c.kv_heads, c.head_dim, rng, k64, 2.0);
    auto v = random_tensor<float>("v", c.batch, c.seq_k, c.kv_heads, c.dv(), rng, v64);
    auto dout = random_tensor<float>("dout", c.batch, c.seq_q, c.heads, c.dv(), rng, do64);
    Tensor4<float> out("out", c.batch, c.seq_q, c.heads, c.dv());
    Tensor3<float> lse("lse", c.batch, c.heads, c.seq_q);
    kernels::flash_forward<float, float>(c.params(), q, k, v, out, lse);
    Tensor4<float> grads[2][3];
    for (auto& g : grads) {
      g[0] = Tensor4<float>("dq", c.batch, c.seq_q, c.heads, c.head_dim);
      g[1] = Tensor4<float>("dk", c.batch, c.seq_k, c.kv_heads, c.head_dim);
      g[2] = Tensor4<float>("dv", c.batch, c.seq_k, c.kv_heads, c.dv());
      for (auto& t : g) poison(t);
    }
    kernels::AttentionParams p = c.params();
    p.deterministic = true;
    kernels::flash_backward<float>(p, q, k, v, out, dout, lse, grads[0][0], grads[0][1], grads[0][2]);
    kernels::flash_backward<float>(p, q, k, v, out, dout, lse, grads[1][0], grads[1][1], grads[1][2], &workspace);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(to_doubles(grads[1][i]), to_doubles(grads[0][i])) << "gradient " << i;
  }
  EXPECT_GT(workspace.q.extent(0), 0u) << "the portable backward kept nothing in the workspace";
}

// The ring calls the accumulating mode once per K/V block with the final lse and delta of the
// whole sequence; the sum over blocks must equal the gradient of the whole, and what was in
// the buffers before must be kept (accumulation, not overwrite).
TEST(BackwardAccumulate, BlocksSumToWholeAndKeepPriorContents) {
  using T = bf16_t;
  const std::int64_t S = 150, H = 4, HKV = 2, D = 32, half = S / 2;
  CaseSpec whole{1, S, S, H, HKV, D, RFA_MASK_CAUSAL, {}, {}};
  std::mt19937_64 rng(31);
  BackwardInputs in;
  auto q = random_tensor<T>("q", 1, S, H, D, rng, in.q64, 2.0);
  auto k = random_tensor<T>("k", 1, S, HKV, D, rng, in.k64, 2.0);
  auto v = random_tensor<T>("v", 1, S, HKV, D, rng, in.v64);
  auto dout = random_tensor<T>("dout", 1, S, H, D, rng, in.dout64);
  Tensor4<float> out("out", 1, S, H, D);
  Tensor3<float> lse("lse", 1, H, S);
  kernels::flash_forward<T, float>(whole.params(), q, k, v, out, lse);
  Tensor3<float> delta("delta", 1, H, S);
  kernels::compute_delta<T, float>(whole.params(), dout, out, delta);

  Tensor4<float> dq("dq", 1, S, H, D), dk("dk", 1, S, HKV, D), dv("dv", 1, S, HKV, D);
  // Each gradient starts from a value of its own, so that a kernel that overwrote one, or wrote
  // one gradient into another's buffer, is seen.
  const float prior_dq = 0.25f, prior_dk = -0.5f, prior_dv = 0.75f;
  Kokkos::deep_copy(dq, prior_dq);
  Tensor4<float> dk_half[2] = {Tensor4<float>("dk0", 1, half, HKV, D), Tensor4<float>("dk1", 1, half, HKV, D)};
  Tensor4<float> dv_half[2] = {Tensor4<float>("dv0", 1, half, HKV, D), Tensor4<float>("dv1", 1, half, HKV, D)};
  for (int blk = 0; blk < 2; ++blk) {
    const std::pair<std::int64_t, std::int64_t> rows(blk * half, (blk + 1) * half);
    auto k_blk = Kokkos::subview(k, Kokkos::ALL, rows, Kokkos::ALL, Kokkos::ALL);
    auto v_blk = Kokkos::subview(v, Kokkos::ALL, rows, Kokkos::ALL, Kokkos::ALL);
    Tensor4<T> k_copy("kc", 1, half, HKV, D), v_copy("vc", 1, half, HKV, D);
    Kokkos::deep_copy(k_copy, k_blk);
    Kokkos::deep_copy(v_copy, v_blk);
    Kokkos::deep_copy(dk_half[blk], prior_dk);
    Kokkos::deep_copy(dv_half[blk], prior_dv);
    CaseSpec part = whole;
    part.seq_k = half;
    part.k_pos = PositionMap::contiguous(blk * half, half);
    kernels::flash_backward_accumulate<T>(part.params(), q, k_copy, v_copy, dout, lse, delta, dq, dk_half[blk],
                                          dv_half[blk]);
  }
  reference::backward(whole.problem(), in.q64, in.k64, in.v64, in.dout64, in.dq_ref, in.dk_ref, in.dv_ref);
  std::vector<double> dq_got = to_doubles(dq), dk_got, dv_got;
  for (auto& x : dq_got) x -= prior_dq;
  for (int blk = 0; blk < 2; ++blk) {
    for (auto x : to_doubles(dk_half[blk])) dk_got.push_back(x - prior_dk);
    for (auto x : to_doubles(dv_half[blk])) dv_got.push_back(x - prior_dv);
  }
  // fp32 accuracy, but on AVX512-BF16 dot products, where P and dS enter their products as one
  // bf16 term (kernels/flash_backward_bf16.cpp): each term then carries a relative rounding of up
  // to 2^-9 (about 2e-3; measured 1.3e-3 to 2.2e-3 here), still well inside bf16 storage's 1.6e-2.
  const bool one_term = kernels::host_bf16_products(whole.params()) == kernels::Bf16Products::avx512_dot;
  const double tol = one_term ? 5e-3 : 2e-4;
  RFA_EXPECT_CLOSE(dq_got, in.dq_ref, tol, "dq");
  RFA_EXPECT_CLOSE(dk_got, in.dk_ref, tol, "dk");
  RFA_EXPECT_CLOSE(dv_got, in.dv_ref, tol, "dv");
}

}  // namespace
}  // namespace test
}  // namespace rfa
