// SPDX-License-Identifier: BSD-3-Clause
// A value head dim other than that of the queries and keys through the C API
// (options.value_head_dim, as multi-head latent attention's 192 / 128): every strategy and
// layout, fp32 and 16-bit, GQA, V narrower and wider than Q and K, windows, per-sequence
// documents, soft caps and attention sinks, on 1-8 ranks, forward and backward against the
// float64 reference; the sharding helpers' _dim forms round trip such tensors; bad value head
// dims, and CUDA contexts (one head dim), are refused on every rank.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <string>
#include <vector>

#include "capi_reference.hpp"
#include "capi_test_support.hpp"
#include "rfa/rfa_mpi.h"

namespace {

using namespace rfa_capi_test;

struct Case {
  rfa_strategy_t strategy;
  rfa_layout_t layout;
  rfa_dtype_t dtype;
  rfa_mask_t mask;
  int64_t head_dim, value_dim;
  int64_t window = 0;
  bool documents = false;  ///< per-sequence documents, one list per batch entry
  double softcap = 0;
  bool sinks = false;
};

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  return case_label(c.strategy, c.layout, c.dtype, c.mask) + "_d" + std::to_string(c.head_dim) + "v" +
         std::to_string(c.value_dim) + (c.window > 0 ? "_window" : "") + (c.documents ? "_documents" : "") +
         (c.softcap > 0 ? "_softcap" : "") + (c.sinks ? "_sinks" : "");
}

void PrintTo(const Case& c, std::ostream* os) { *os << case_name(::testing::TestParamInfo<Case>(c, 0)); }

constexpr int64_t kBatch = 2, kChunk = 5;  // kChunk: tokens per zigzag chunk (two per rank)
int64_t seq_for(int P) { return 2 * P * kChunk; }

/// Entry 0: a boundary on every chunk edge and one either side in turn; entry 1: one document.
std::vector<std::vector<int64_t>> entry_lists(int P) {
  const int64_t S = seq_for(P);
  std::vector<int64_t> edges{0};
  for (int64_t k = 1; k < 2 * P; ++k) edges.push_back(k * kChunk + (k % 3) - 1);
  edges.push_back(S);
  return {edges, {}};
}

rfa_options_t options_for(const Case& c, const rfa::reference::DocumentLists& packed) {
  rfa_options_t o = variant_options(c.strategy, c.layout, c.dtype, c.mask, kChunk, c.head_dim, kBatch);
  o.value_head_dim = c.value_dim;
  o.window = c.window;
  o.softcap = c.softcap;
  if (c.softcap > 0) o.softmax_scale = 0.75;  // scores of a few units, which a cap of 0.5 bends
  if (c.documents) {
    o.doc_boundaries = packed.bounds.data();
    o.doc_boundary_count = int64_t(packed.bounds.size());
    o.doc_boundary_offsets = packed.offsets.data();
    o.doc_boundary_offset_count = int64_t(packed.offsets.size());
  }
  o.attention_sinks = c.sinks ? 1 : 0;
  return o;
}

class CapiValueHeadDim : public ::testing::TestWithParam<Case> {};

TEST_P(CapiValueHeadDim, MatchesFloat64Reference) {
  const Case c = GetParam();
  const int P = world_size();
  const std::vector<std::vector<int64_t>> lists = c.documents ? entry_lists(P) : std::vector<std::vector<int64_t>>();
  const rfa::reference::DocumentLists packed = rfa::reference::pack_document_lists(lists);
  const rfa_options_t o = options_for(c, packed);
  rfa_context_t ctx = nullptr;
  ASSERT_RFA_OK(rfa_context_create(MPI_COMM_WORLD, &o, &ctx));
  rfa_options_t kept;
  rfa_options_init(&kept);
  ASSERT_RFA_OK(rfa_context_get_options(ctx, &kept));
  EXPECT_EQ(kept.value_head_dim, c.value_dim);
  const std::vector<float> sinks = c.sinks ? std::vector<float>(std::size_t(o.heads), 0.25f) : std::vector<float>();
  const ReferenceRun ref(o, {}, 61, sinks, {}, lists);
  expect_forward_backward_match(ctx, o, ref, variant_tolerance(c.dtype), sinks);
  ASSERT_RFA_OK(rfa_context_destroy(ctx));
}

std::vector<Case> cases() {
  std::vector<Case> all;
  // V narrower than Q and K (MLA's shape, scaled down), then wider, on every layout.
  for (rfa_layout_t layout : {RFA_LAYOUT_CONTIGUOUS, RFA_LAYOUT_ZIGZAG, RFA_LAYOUT_STRIPE}) {
    all.push_back({RFA_STRATEGY_RING, layout, RFA_DTYPE_FLOAT32, RFA_MASK_CAUSAL, 24, 16});
    all.push_back({RFA_STRATEGY_RING, layout, RFA_DTYPE_FLOAT32, RFA_MASK_NONE, 16, 40});
  }
  for (rfa_strategy_t s : {RFA_STRATEGY_ULYSSES, RFA_STRATEGY_ALLGATHER, RFA_STRATEGY_HYBRID, RFA_STRATEGY_NEEDED}) {
    all.push_back({s, RFA_LAYOUT_ZIGZAG, RFA_DTYPE_FLOAT32, RFA_MASK_CAUSAL, 24, 16});
    all.push_back({s, RFA_LAYOUT_CONTIGUOUS, RFA_DTYPE_BFLOAT16, RFA_MASK_NONE, 16, 32, 7});
  }
  // MLA's own head dims in bf16 (the bf16 product kernels where the CPU has them), fp16.
  all.push_back({RFA_STRATEGY_RING, RFA_LAYOUT_ZIGZAG, RFA_DTYPE_BFLOAT16, RFA_MASK_CAUSAL, 192, 128});
  all.push_back({RFA_STRATEGY_HYBRID, RFA_LAYOUT_ZIGZAG, RFA_DTYPE_BFLOAT16, RFA_MASK_CAUSAL, 192, 128});
  all.push_back({RFA_STRATEGY_RING, RFA_LAYOUT_STRIPE, RFA_DTYPE_FLOAT16, RFA_MASK_CAUSAL, 32, 8, 6});
  all.push_back({RFA_STRATEGY_AUTO, RFA_LAYOUT_ZIGZAG, RFA_DTYPE_FLOAT32, RFA_MASK_CAUSAL, 24, 16});
  // The balanced layout: a rank's rows in chunks scattered over the sequence.
  all.push_back({RFA_STRATEGY_RING, RFA_LAYOUT_BALANCED, RFA_DTYPE_FLOAT32, RFA_MASK_CAUSAL, 24, 16});
  all.push_back({RFA_STRATEGY_NEEDED, RFA_LAYOUT_BALANCED, RFA_DTYPE_BFLOAT16, RFA_MASK_NONE, 16, 32, 7});
  // With per-sequence documents, a soft cap and attention sinks.
  all.push_back({RFA_STRATEGY_RING, RFA_LAYOUT_ZIGZAG, RFA_DTYPE_FLOAT32, RFA_MASK_CAUSAL, 24, 16, 6, true});
  all.push_back({RFA_STRATEGY_ALLGATHER, RFA_LAYOUT_STRIPE, RFA_DTYPE_BFLOAT16, RFA_MASK_NONE, 16, 32, 0, true});
  all.push_back({RFA_STRATEGY_RING, RFA_LAYOUT_ZIGZAG, RFA_DTYPE_FLOAT32, RFA_MASK_CAUSAL, 24, 16, 0, false, 0.5});
  all.push_back({RFA_STRATEGY_RING, RFA_LAYOUT_ZIGZAG, RFA_DTYPE_FLOAT32, RFA_MASK_CAUSAL, 24, 16, 0, false, 0, true});
  all.push_back(
      {RFA_STRATEGY_ULYSSES, RFA_LAYOUT_STRIPE, RFA_DTYPE_BFLOAT16, RFA_MASK_NONE, 16, 32, 5, false, 0, true});
  return all;
}

INSTANTIATE_TEST_SUITE_P(Variants, CapiValueHeadDim, ::testing::ValuesIn(cases()), case_name);

// The sharding helpers' _dim forms move tensors of the value head dim: scatter, gather and
// all-gather give back the whole tensor bit for bit, on the zigzag's two chunks a rank and the
// balanced layout's eight.
class CapiValueHeadDimSharding : public ::testing::TestWithParam<rfa_layout_t> {};

TEST_P(CapiValueHeadDimSharding, DimHelpersRoundTrip) {
  const Case c{RFA_STRATEGY_RING, GetParam(), RFA_DTYPE_FLOAT32, RFA_MASK_CAUSAL, 24, 16};
  const rfa_options_t o = options_for(c, {});
  rfa_context_t ctx = nullptr;
  ASSERT_RFA_OK(rfa_context_create(MPI_COMM_WORLD, &o, &ctx));
  int64_t L = 0;
  ASSERT_RFA_OK(rfa_context_get_local_seq(ctx, &L));
  const int64_t DV = c.value_dim, n = o.batch * o.seq_total * o.heads * DV;
  std::vector<float> global(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) global[std::size_t(i)] = float(i);
  std::vector<float> local(static_cast<std::size_t>(o.batch * L * o.heads * DV), -1.0f);
  ASSERT_RFA_OK(rfa_scatter_bshd_dim(ctx, o.heads, DV, global.data(), local.data()));
  std::vector<float> gathered(global.size(), -1.0f), all(global.size(), -1.0f);
  ASSERT_RFA_OK(rfa_gather_bshd_dim(ctx, o.heads, DV, local.data(), gathered.data()));
  ASSERT_RFA_OK(rfa_allgather_bshd_dim(ctx, o.heads, DV, local.data(), all.data()));
  EXPECT_EQ(all, global);
  // gather writes this rank's rows only: they are the global tensor's, the others untouched.
  std::size_t mine = 0;
  for (std::size_t i = 0; i < gathered.size(); ++i) {
    EXPECT_TRUE(gathered[i] == global[i] || gathered[i] == -1.0f) << i;
    mine += gathered[i] == global[i];
  }
  EXPECT_EQ(mine, local.size());
  // A head dim below 1 is refused; the all-gather is refused on every rank when one rank's
  // head dim differs.
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_scatter_bshd_dim(ctx, o.heads, 0, global.data(), local.data()),
                   "head_dim is 0");
  if (world_size() > 1) {
    const int64_t dim = world_rank() == 1 ? DV / 2 : DV;
    EXPECT_RFA_FAILS(RFA_ERROR_INVALID_USAGE, rfa_allgather_bshd_dim(ctx, o.heads, dim, local.data(), all.data()),
                     "head dimension");
  }
  ASSERT_RFA_OK(rfa_context_destroy(ctx));
}

INSTANTIATE_TEST_SUITE_P(Layouts, CapiValueHeadDimSharding, ::testing::Values(RFA_LAYOUT_ZIGZAG, RFA_LAYOUT_BALANCED),
                         [](const ::testing::TestParamInfo<rfa_layout_t>& info) {
                           return std::string(info.param == RFA_LAYOUT_BALANCED ? "balanced" : "zigzag");
                         });

// Value head dims the kernels do not take fail creation on every rank, naming the field; CUDA
// contexts take one head dim for Q, K and V.
TEST(CapiValueHeadDimRefusals, BadValueHeadDimsFailCreationOnEveryRank) {
  const Case base{RFA_STRATEGY_RING, RFA_LAYOUT_ZIGZAG, RFA_DTYPE_FLOAT32, RFA_MASK_CAUSAL, 24, 16};
  const struct {
    int64_t value_dim;
    rfa_result_t code;
    const char* says;
  } bad[] = {{-8, RFA_ERROR_INVALID_ARGUMENT, "options.value_head_dim is -8"},
             {12, RFA_ERROR_UNSUPPORTED, "value head dim 12"},
             {264, RFA_ERROR_UNSUPPORTED, "value head dim 264"}};
  for (const auto& b : bad) {
    rfa_options_t o = options_for(base, {});
    o.value_head_dim = b.value_dim;
    rfa_context_t ctx = nullptr;
    EXPECT_RFA_FAILS(b.code, rfa_context_create(MPI_COMM_WORLD, &o, &ctx), b.says);
    EXPECT_EQ(ctx, nullptr);
  }
  rfa_options_t o = options_for(base, {});
  o.device = RFA_DEVICE_CUDA;
  o.dtype = RFA_DTYPE_BFLOAT16;
  o.head_dim = 128;
  o.value_head_dim = 64;
  rfa_context_t ctx = nullptr;
  EXPECT_RFA_FAILS(RFA_ERROR_UNSUPPORTED, rfa_context_create(MPI_COMM_WORLD, &o, &ctx), "value head dim (64)", "CUDA");
  EXPECT_EQ(ctx, nullptr);
}

}  // namespace
