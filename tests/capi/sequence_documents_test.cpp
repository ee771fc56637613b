// SPDX-License-Identifier: BSD-3-Clause
// Per-sequence documents through the C API (options.doc_boundary_offsets): every batch entry
// with its own document boundaries, on every strategy and layout, fp32 and 16-bit, GQA,
// windows and the causal mask or none, on 1-8 ranks, forward and backward against the float64
// reference with each entry's documents. The entries' lists put boundaries on the layout's
// chunk edges and one either side, hide every ring step but the diagonal from one entry while
// another needs them all, and rotate from case to case, so that an engine that takes one
// entry's list for all, or selects steps from one entry, fails. Bad offsets are refused on
// every rank before any communication, naming what to change.
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
  int64_t window = 0;
  int rotation = 0;    ///< which list entry 0 takes; the others follow in turn
  double softcap = 0;  ///< options.softcap: the documents with capped scores
};

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  return case_label(c.strategy, c.layout, c.dtype, c.mask) + (c.window > 0 ? "_window" : "") + "_rot" +
         std::to_string(c.rotation) + (c.softcap > 0 ? "_softcap" : "");
}

constexpr int64_t kBatch = 3, kD = 16;
constexpr int64_t kChunk = 5;  // tokens per zigzag chunk (two per rank)
int64_t seq_for(int P) { return 2 * P * kChunk; }

/// Boundaries 0 .. S, sorted, without repeats beyond those given on purpose.
std::vector<int64_t> sorted_bounds(std::vector<int64_t> inner, int64_t S) {
  std::vector<int64_t> b{0};
  std::sort(inner.begin(), inner.end());
  for (int64_t x : inner)
    if (x > 0 && x < S) b.push_back(x);
  b.push_back(S);
  return b;
}

/// The three lists the entries take in turn: documents of one token (every ring step but the
/// diagonal hidden), boundaries on every chunk edge and one either side (in turn), and none.
std::vector<std::vector<int64_t>> entry_lists(int P, int rotation) {
  const int64_t S = seq_for(P), c = kChunk;
  std::vector<int64_t> one_token;
  for (int64_t x = 1; x < S; ++x) one_token.push_back(x);
  std::vector<int64_t> edges;
  for (int64_t k = 1; k < 2 * P; ++k) edges.push_back(k * c + (k % 3) - 1);
  std::vector<std::vector<int64_t>> lists = {sorted_bounds(one_token, S), sorted_bounds(edges, S), {}};
  std::rotate(lists.begin(), lists.begin() + rotation % 3, lists.end());
  return lists;
}

rfa_options_t options_for(const Case& c, const rfa::reference::DocumentLists& packed) {
  rfa_options_t o = variant_options(c.strategy, c.layout, c.dtype, c.mask, kChunk, kD, kBatch);
  o.window = c.window;
  o.softcap = c.softcap;
  o.doc_boundaries = packed.bounds.data();
  o.doc_boundary_count = int64_t(packed.bounds.size());
  o.doc_boundary_offsets = packed.offsets.data();
  o.doc_boundary_offset_count = int64_t(packed.offsets.size());
  return o;
}

class CapiSequenceDocuments : public ::testing::TestWithParam<Case> {};

TEST_P(CapiSequenceDocuments, EachEntryMatchesTheReferenceWithItsOwnDocuments) {
  const Case c = GetParam();
  const int P = world_size();
  const std::vector<std::vector<int64_t>> lists = entry_lists(P, c.rotation);
  const rfa::reference::DocumentLists packed = rfa::reference::pack_document_lists(lists);
  const rfa_options_t o = options_for(c, packed);
  rfa_context_t ctx = nullptr;
  ASSERT_RFA_OK(rfa_context_create(MPI_COMM_WORLD, &o, &ctx));
  // The context keeps its own copy of the offsets, and says so.
  rfa_options_t kept;
  rfa_options_init(&kept);
  ASSERT_RFA_OK(rfa_context_get_options(ctx, &kept));
  ASSERT_EQ(kept.doc_boundary_offset_count, kBatch + 1);
  EXPECT_NE(kept.doc_boundary_offsets, packed.offsets.data());
  EXPECT_TRUE(std::equal(packed.offsets.begin(), packed.offsets.end(), kept.doc_boundary_offsets));
  const ReferenceRun ref(o, {}, 57, {}, {}, lists);
  expect_forward_backward_match(ctx, o, ref, variant_tolerance(c.dtype));
  ASSERT_RFA_OK(rfa_context_destroy(ctx));
}

std::vector<Case> cases() {
  std::vector<Case> all;
  int rotation = 0;
  for (rfa_layout_t layout : {RFA_LAYOUT_CONTIGUOUS, RFA_LAYOUT_ZIGZAG, RFA_LAYOUT_STRIPE})
    for (rfa_mask_t mask : {RFA_MASK_CAUSAL, RFA_MASK_NONE})
      all.push_back({RFA_STRATEGY_RING, layout, RFA_DTYPE_FLOAT32, mask, 0, rotation++});
  for (rfa_strategy_t s : {RFA_STRATEGY_ULYSSES, RFA_STRATEGY_ALLGATHER, RFA_STRATEGY_HYBRID, RFA_STRATEGY_NEEDED}) {
    all.push_back({s, RFA_LAYOUT_ZIGZAG, RFA_DTYPE_FLOAT32, RFA_MASK_CAUSAL, 0, rotation++});
    all.push_back({s, RFA_LAYOUT_CONTIGUOUS, RFA_DTYPE_BFLOAT16, RFA_MASK_NONE, 7, rotation++});
  }
  all.push_back({RFA_STRATEGY_RING, RFA_LAYOUT_ZIGZAG, RFA_DTYPE_BFLOAT16, RFA_MASK_CAUSAL, 6, 0});
  all.push_back({RFA_STRATEGY_RING, RFA_LAYOUT_CONTIGUOUS, RFA_DTYPE_FLOAT16, RFA_MASK_CAUSAL, 0, 1});
  all.push_back({RFA_STRATEGY_RING, RFA_LAYOUT_STRIPE, RFA_DTYPE_BFLOAT16, RFA_MASK_NONE, 5, 2});
  all.push_back({RFA_STRATEGY_AUTO, RFA_LAYOUT_ZIGZAG, RFA_DTYPE_FLOAT32, RFA_MASK_CAUSAL, 0, 2});
  // With soft-capped scores (the reference caps them too) and a window.
  all.push_back({RFA_STRATEGY_RING, RFA_LAYOUT_ZIGZAG, RFA_DTYPE_FLOAT32, RFA_MASK_CAUSAL, 6, 1, 0.5});
  all.push_back({RFA_STRATEGY_HYBRID, RFA_LAYOUT_STRIPE, RFA_DTYPE_BFLOAT16, RFA_MASK_NONE, 0, 2, 1.0});
  return all;
}

INSTANTIATE_TEST_SUITE_P(Variants, CapiSequenceDocuments, ::testing::ValuesIn(cases()), case_name);

// Offsets that do not cut the boundaries into one list per entry fail creation on every rank
// with RFA_ERROR_INVALID_ARGUMENT naming the field, and no context is made.
TEST(CapiSequenceDocumentsRefusals, BadOffsetsFailCreationOnEveryRank) {
  const int P = world_size();
  const int64_t S = seq_for(P);
  const Case c{RFA_STRATEGY_RING, RFA_LAYOUT_ZIGZAG, RFA_DTYPE_FLOAT32, RFA_MASK_CAUSAL};
  struct Bad {
    std::vector<int64_t> bounds, offsets;
    const char* says;
  };
  const Bad bad[] = {
      {{0, S, 0, S}, {0, 2, 4}, "options.doc_boundary_offsets has 3 value(s); per-sequence documents need batch + 1"},
      {{0, S, 0, S}, {1, 2, 4, 4}, "options.doc_boundary_offsets[0] is 1"},
      {{0, S, 0, S}, {0, 2, 1, 4}, "options.doc_boundary_offsets[2] = 1 is smaller than"},
      {{0, S, 0, S}, {0, 2, 2, 3}, "must be options.doc_boundaries's count (4)"},
      {{0, S, 0, S - 1}, {0, 2, 2, 4}, "(batch entry 2's list)[1] = "},
      {{0, S, 1, S}, {0, 2, 4, 4}, "(batch entry 1's list)[0] is 1"},
  };
  for (const Bad& b : bad) {
    const rfa::reference::DocumentLists packed{b.bounds, b.offsets};  // alive through the creation
    rfa_options_t o = options_for(c, packed);
    rfa_context_t ctx = nullptr;
    EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_context_create(MPI_COMM_WORLD, &o, &ctx), b.says);
    EXPECT_EQ(ctx, nullptr);
  }
  // A NULL array with a count, and a negative count.
  const rfa::reference::DocumentLists packed = rfa::reference::pack_document_lists(entry_lists(P, 0));
  rfa_options_t o = options_for(c, packed);
  o.doc_boundary_offsets = nullptr;
  rfa_context_t ctx = nullptr;
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_context_create(MPI_COMM_WORLD, &o, &ctx),
                   "options.doc_boundary_offsets is NULL but its count is 4");
  o = options_for(c, packed);
  o.doc_boundary_offset_count = -1;
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_context_create(MPI_COMM_WORLD, &o, &ctx),
                   "doc_boundary_offset_count is -1");
  EXPECT_EQ(ctx, nullptr);
  // A list with its count left at 0 would silently serve no documents (the boundaries) or one
  // list for every entry (the offsets): refused, naming the count.
  o = options_for(c, packed);
  o.doc_boundary_offset_count = 0;
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_context_create(MPI_COMM_WORLD, &o, &ctx),
                   "options.doc_boundary_offsets is set but options.doc_boundary_offset_count is 0");
  const int64_t one_list[] = {0, 3, S};
  o = options_for(c, packed);
  o.doc_boundary_offsets = nullptr;
  o.doc_boundary_offset_count = 0;
  o.doc_boundaries = one_list;
  o.doc_boundary_count = 0;
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_context_create(MPI_COMM_WORLD, &o, &ctx),
                   "options.doc_boundaries is set but options.doc_boundary_count is 0");
  EXPECT_EQ(ctx, nullptr);
}

}  // namespace
