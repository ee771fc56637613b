// SPDX-License-Identifier: BSD-3-Clause
// Masks given as ranges through the C API (RFA_MASK_RANGES): random lists (empty, single-token
// and overlapping entries, bounds on the layouts' chunk edges and next to them, every kind)
// on every layout and strategy, fp32 and 16-bit, GQA, with a window and documents on top, on
// 1-8 ranks, forward and backward against the float64 reference with the same list; an empty
// list hides every key; the builders of masks that have their own option give that option's
// results bit for bit; bad lists and lists without the mask (or a mask without its list) refused on
// every rank.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "capi_reference.hpp"
#include "capi_test_support.hpp"
#include "random_mask_ranges.hpp"
#include "rfa/rfa_mpi.h"

namespace {

using namespace rfa_capi_test;

struct Case {
  rfa_strategy_t strategy;
  rfa_layout_t layout;
  rfa_dtype_t dtype;
  int entries;  // random entries in the list (0: an empty list)
  std::uint64_t seed;
  int64_t window = 0;
  bool documents = false;
};

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  const char* strategies[] = {"ring", "ulysses", "allgather", "hybrid", "auto", "needed"};
  const char* layouts[] = {"contiguous", "zigzag", "stripe", "balanced"};
  const char* dtypes[] = {"fp32", "bf16", "fp16"};
  return std::string(strategies[c.strategy]) + "_" + layouts[c.layout] + "_" + dtypes[c.dtype] + "_" +
         std::to_string(c.entries) + "entries_seed" + std::to_string(c.seed) + (c.window > 0 ? "_window" : "") +
         (c.documents ? "_documents" : "");
}

// The chunk edges of every layout at P ranks (2P chunks), where a range's bounds test the
// ring's step classification and the kernels' tiles at once.
std::vector<int64_t> chunk_edges(int64_t S, int P) {
  std::vector<int64_t> edges;
  for (int64_t c = 0; c <= 2 * P; ++c) edges.push_back(c * S / (2 * P));
  return edges;
}

rfa_options_t range_options(const Case& c, const std::vector<rfa_mask_range_t>& ranges,
                            const std::vector<int64_t>& bounds) {
  rfa_options_t o = variant_options(c.strategy, c.layout, c.dtype, RFA_MASK_RANGES, 6, 16);
  o.mask_ranges = ranges.empty() ? nullptr : ranges.data();
  o.mask_range_count = int64_t(ranges.size());
  o.window = c.window;
  if (c.documents) {
    o.doc_boundaries = bounds.data();
    o.doc_boundary_count = int64_t(bounds.size());
  }
  return o;
}

class CapiMaskRanges : public ::testing::TestWithParam<Case> {};

TEST_P(CapiMaskRanges, MatchesFloat64ReferenceWithTheSameList) {
  const Case c = GetParam();
  const int P = world_size();
  const int64_t S = 2 * P * 6;
  std::mt19937_64 rng(c.seed * 1000 + std::uint64_t(P));  // the same list on every rank
  const std::vector<rfa_mask_range_t> ranges = rfa_test::random_mask_ranges(rng, S, c.entries, chunk_edges(S, P));
  const std::vector<int64_t> bounds = {0, 1, S / 3, S - 2, S};
  const rfa_options_t o = range_options(c, ranges, bounds);
  rfa_context_t ctx = nullptr;
  ASSERT_RFA_OK(rfa_context_create(MPI_COMM_WORLD, &o, &ctx));
  rfa_options_t kept;
  rfa_options_init(&kept);
  ASSERT_RFA_OK(rfa_context_get_options(ctx, &kept));
  ASSERT_EQ(kept.mask_range_count, int64_t(ranges.size()));
  if (!ranges.empty()) {
    EXPECT_NE(kept.mask_ranges, ranges.data()) << "the context keeps its own copy";
    EXPECT_EQ(kept.mask_ranges[ranges.size() - 1].k_end, ranges.back().k_end);
  }
  const ReferenceRun ref(o, c.documents ? bounds : std::vector<int64_t>(), 43, {}, ranges);
  expect_forward_backward_match(ctx, o, ref, variant_tolerance(c.dtype));
  ASSERT_RFA_OK(rfa_context_destroy(ctx));
}

std::vector<Case> cases() {
  std::vector<Case> all;
  std::uint64_t seed = 1;
  for (rfa_layout_t layout : {RFA_LAYOUT_CONTIGUOUS, RFA_LAYOUT_ZIGZAG, RFA_LAYOUT_STRIPE})
    for (int entries : {1, 3, 8}) all.push_back({RFA_STRATEGY_RING, layout, RFA_DTYPE_FLOAT32, entries, seed++});
  for (rfa_strategy_t s :
       {RFA_STRATEGY_ULYSSES, RFA_STRATEGY_ALLGATHER, RFA_STRATEGY_HYBRID, RFA_STRATEGY_NEEDED, RFA_STRATEGY_AUTO}) {
    all.push_back({s, RFA_LAYOUT_ZIGZAG, RFA_DTYPE_FLOAT32, 4, seed++});
    all.push_back({s, RFA_LAYOUT_CONTIGUOUS, RFA_DTYPE_BFLOAT16, 6, seed++});
  }
  all.push_back({RFA_STRATEGY_RING, RFA_LAYOUT_ZIGZAG, RFA_DTYPE_BFLOAT16, 5, seed++});
  all.push_back({RFA_STRATEGY_RING, RFA_LAYOUT_STRIPE, RFA_DTYPE_FLOAT16, 5, seed++});
  // With a window and documents on top of the ranges.
  all.push_back({RFA_STRATEGY_RING, RFA_LAYOUT_ZIGZAG, RFA_DTYPE_FLOAT32, 6, seed++, 5});
  all.push_back({RFA_STRATEGY_RING, RFA_LAYOUT_CONTIGUOUS, RFA_DTYPE_FLOAT32, 6, seed++, 0, true});
  all.push_back({RFA_STRATEGY_ULYSSES, RFA_LAYOUT_STRIPE, RFA_DTYPE_FLOAT32, 6, seed++, 7, true});
  // An empty list: every row sees nothing (out 0, lse -inf, gradients 0).
  all.push_back({RFA_STRATEGY_RING, RFA_LAYOUT_ZIGZAG, RFA_DTYPE_FLOAT32, 0, seed++});
  all.push_back({RFA_STRATEGY_ALLGATHER, RFA_LAYOUT_CONTIGUOUS, RFA_DTYPE_FLOAT32, 0, seed++});
  // ... with 16-bit outputs, which a one-step pass (Ulysses; the ring on one rank) writes
  // straight from its one block, hidden whole here.
  all.push_back({RFA_STRATEGY_ULYSSES, RFA_LAYOUT_ZIGZAG, RFA_DTYPE_BFLOAT16, 0, seed++});
  all.push_back({RFA_STRATEGY_RING, RFA_LAYOUT_STRIPE, RFA_DTYPE_FLOAT16, 0, seed++});
  // The needed-only exchange: an empty list (no round; the one local block written straight
  // into 16-bit outputs), windows and documents on top.
  all.push_back({RFA_STRATEGY_NEEDED, RFA_LAYOUT_ZIGZAG, RFA_DTYPE_FLOAT32, 0, seed++});
  all.push_back({RFA_STRATEGY_NEEDED, RFA_LAYOUT_STRIPE, RFA_DTYPE_BFLOAT16, 0, seed++});
  all.push_back({RFA_STRATEGY_NEEDED, RFA_LAYOUT_STRIPE, RFA_DTYPE_FLOAT32, 6, seed++, 7, true});
  all.push_back({RFA_STRATEGY_NEEDED, RFA_LAYOUT_CONTIGUOUS, RFA_DTYPE_FLOAT32, 8, seed++, 5});
  all.push_back({RFA_STRATEGY_NEEDED, RFA_LAYOUT_ZIGZAG, RFA_DTYPE_FLOAT16, 3, seed++, 0, true});
  return all;
}

INSTANTIATE_TEST_SUITE_P(Lists, CapiMaskRanges, ::testing::ValuesIn(cases()), case_name);

// Each builder of a mask that has its own option (causal, sliding windows with and without the
// causal mask, documents with and without it) gives that option's results bit for bit: the
// same visible pairs, and the same tiles and ring steps computed, on every layout and strategy.
struct Spelled {
  const char* name;
  rfa_strategy_t strategy;
  rfa_layout_t layout;
  rfa_mask_t mask;  // the dedicated option's mask
  int64_t window;   // and its window
  bool documents;   // and its documents
};

class CapiMaskRangesSpelled : public ::testing::TestWithParam<Spelled> {};

TEST_P(CapiMaskRangesSpelled, BuilderGivesTheDedicatedOptionsBits) {
  const Spelled sp = GetParam();
  const int P = world_size();
  const int64_t S = 2 * P * 6, L = S / P;
  const std::vector<int64_t> bounds = {0, 5, 5, S - 7, S};
  const int32_t causal = sp.mask == RFA_MASK_CAUSAL;
  int64_t n = 0;
  std::vector<rfa_mask_range_t> ranges(8);
  if (sp.documents)
    ASSERT_RFA_OK(rfa_mask_ranges_documents(bounds.data(), int64_t(bounds.size()), causal, ranges.data(), 8, &n));
  else if (sp.window > 0)
    ASSERT_RFA_OK(rfa_mask_ranges_sliding_window(S, sp.window, causal, ranges.data(), 8, &n));
  else
    ASSERT_RFA_OK(rfa_mask_ranges_causal(S, ranges.data(), 8, &n));
  ranges.resize(std::size_t(n));
  const Case c{sp.strategy, sp.layout, RFA_DTYPE_FLOAT32, 1, 0};
  const rfa_options_t with_ranges = range_options(c, ranges, {});
  rfa_options_t dedicated = range_options(c, {}, bounds);
  dedicated.mask = sp.mask;
  dedicated.window = sp.window;
  if (sp.documents) {
    dedicated.doc_boundaries = bounds.data();
    dedicated.doc_boundary_count = int64_t(bounds.size());
  }
  const ReferenceRun ref(dedicated, sp.documents ? bounds : std::vector<int64_t>(), 47);
  std::vector<std::vector<float>> results;
  for (const rfa_options_t* o : {&with_ranges, static_cast<const rfa_options_t*>(&dedicated)}) {
    rfa_context_t ctx = nullptr;
    ASSERT_RFA_OK(rfa_context_create(MPI_COMM_WORLD, o, &ctx));
    LocalShards shards(*o, L);
    ASSERT_RFA_OK(shards.scatter(ctx, ref, *o));
    std::vector<float> lse(std::size_t(o->batch * o->heads * L));
    ASSERT_RFA_OK(rfa_forward(ctx, shards.q.data(), shards.k.data(), shards.v.data(), shards.out.data(), lse.data()));
    ASSERT_RFA_OK(rfa_backward(ctx, shards.q.data(), shards.k.data(), shards.v.data(), shards.out.data(),
                               shards.dout.data(), lse.data(), shards.dq.data(), shards.dk.data(), shards.dv.data()));
    std::vector<float> all = lse;
    for (const Stored* t : {&shards.out, &shards.dq, &shards.dk, &shards.dv})
      for (std::size_t i = 0; i < t->size(); ++i) all.push_back(float(t->get(i)));
    results.push_back(all);
    ASSERT_RFA_OK(rfa_context_destroy(ctx));
  }
  EXPECT_EQ(results[0], results[1]);
}

std::vector<Spelled> spelled_cases() {
  std::vector<Spelled> all;
  for (rfa_layout_t layout : {RFA_LAYOUT_CONTIGUOUS, RFA_LAYOUT_ZIGZAG, RFA_LAYOUT_STRIPE}) {
    const char* names[] = {"causal_contiguous", "causal_zigzag", "causal_stripe"};
    all.push_back({names[layout], RFA_STRATEGY_RING, layout, RFA_MASK_CAUSAL, 0, false});
  }
  all.push_back({"window_causal", RFA_STRATEGY_RING, RFA_LAYOUT_ZIGZAG, RFA_MASK_CAUSAL, 5, false});
  all.push_back({"window_noncausal", RFA_STRATEGY_RING, RFA_LAYOUT_CONTIGUOUS, RFA_MASK_NONE, 7, false});
  all.push_back({"window_of_one_ulysses", RFA_STRATEGY_ULYSSES, RFA_LAYOUT_STRIPE, RFA_MASK_CAUSAL, 1, false});
  all.push_back({"documents_causal", RFA_STRATEGY_RING, RFA_LAYOUT_ZIGZAG, RFA_MASK_CAUSAL, 0, true});
  all.push_back({"documents_full_allgather", RFA_STRATEGY_ALLGATHER, RFA_LAYOUT_CONTIGUOUS, RFA_MASK_NONE, 0, true});
  all.push_back({"documents_causal_hybrid", RFA_STRATEGY_HYBRID, RFA_LAYOUT_ZIGZAG, RFA_MASK_CAUSAL, 0, true});
  all.push_back({"window_causal_needed", RFA_STRATEGY_NEEDED, RFA_LAYOUT_CONTIGUOUS, RFA_MASK_CAUSAL, 5, false});
  all.push_back({"documents_full_needed", RFA_STRATEGY_NEEDED, RFA_LAYOUT_ZIGZAG, RFA_MASK_NONE, 0, true});
  return all;
}

INSTANTIATE_TEST_SUITE_P(Builders, CapiMaskRangesSpelled, ::testing::ValuesIn(spelled_cases()),
                         [](const ::testing::TestParamInfo<Spelled>& info) { return std::string(info.param.name); });

// Bad lists fail creation on every rank with the entry and the rule named; a list without
// RFA_MASK_RANGES, and RFA_MASK_RANGES with a NULL list of nonzero count, too.
TEST(CapiMaskRangesRefusals, BadListsFailCreationOnEveryRank) {
  const int P = world_size();
  const int64_t S = 2 * P * 6;
  const Case c{RFA_STRATEGY_RING, RFA_LAYOUT_ZIGZAG, RFA_DTYPE_FLOAT32, 1, 0};
  const struct {
    rfa_mask_range_t entry;
    const char* says;
  } bad[] = {
      {{0, S + 1, 0, S, 0, 0, RFA_RANGE_FULL}, "options.mask_ranges[1].q_end is"},
      {{5, 4, 0, S, 0, 0, RFA_RANGE_FULL}, "options.mask_ranges[1].q_end is 4"},
      {{0, S, -2, S, 0, 0, RFA_RANGE_FULL}, "options.mask_ranges[1].k_begin is -2"},
      {rfa_test::with_kind({0, S, 0, S, 0, 0, RFA_RANGE_FULL}, 9), "options.mask_ranges[1].kind is 9"},
      {{0, S, 0, S, 3, -3, RFA_RANGE_BAND}, "band_lo must not exceed band_hi"},
  };
  for (const auto& b : bad) {
    const std::vector<rfa_mask_range_t> list = {{0, S, 0, S, 0, 0, RFA_RANGE_CAUSAL}, b.entry};
    rfa_options_t o = range_options(c, list, {});
    rfa_context_t ctx = nullptr;
    EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_context_create(MPI_COMM_WORLD, &o, &ctx), b.says);
    EXPECT_EQ(ctx, nullptr);
  }
  const std::vector<rfa_mask_range_t> good = {{0, S, 0, S, 0, 0, RFA_RANGE_CAUSAL}};
  rfa_options_t o = range_options(c, good, {});
  o.mask = RFA_MASK_CAUSAL;
  rfa_context_t ctx = nullptr;
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_context_create(MPI_COMM_WORLD, &o, &ctx),
                   "options.mask is not RFA_MASK_RANGES");
  o = range_options(c, good, {});
  o.mask_ranges = nullptr;
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_context_create(MPI_COMM_WORLD, &o, &ctx),
                   "options.mask_ranges is NULL but its count is 1");
  o.mask_range_count = -1;
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_context_create(MPI_COMM_WORLD, &o, &ctx), "count of -1");
  // A list with its count left at 0 would hide every key: refused; NULL with 0 is that mask.
  o = range_options(c, good, {});
  o.mask_range_count = 0;
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_context_create(MPI_COMM_WORLD, &o, &ctx),
                   "options.mask_ranges is set but options.mask_range_count is 0");
  EXPECT_EQ(ctx, nullptr);
  if (P < 2) return;
  // A bad entry on one rank only: that rank's verdict fails every rank.
  std::vector<rfa_mask_range_t> mine = good;
  if (world_rank() == 1) mine[0].q_end = S + 5;
  o = range_options(c, mine, {});
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_context_create(MPI_COMM_WORLD, &o, &ctx),
                   world_rank() == 1 ? "mask_ranges[0].q_end" : "rank(s) 1");
  EXPECT_EQ(ctx, nullptr);
  // A list's pointer left beside another mask on one rank only, the count 0 everywhere: the
  // ranks agree on the entries (none), not on the pointer, so that rank's refusal must come
  // before they agree, every rank failing at once rather than waiting for it.
  o = range_options(c, good, {});
  o.mask = RFA_MASK_CAUSAL;
  o.mask_range_count = 0;
  if (world_rank() != 1) o.mask_ranges = nullptr;
  o.timeout_s = 30;  // a rank left waiting ends here, long after every rank should have failed
  const double begun = MPI_Wtime();
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_context_create(MPI_COMM_WORLD, &o, &ctx),
                   world_rank() == 1 ? "options.mask is not RFA_MASK_RANGES" : "rank(s) 1");
  EXPECT_EQ(ctx, nullptr);
  EXPECT_LT(MPI_Wtime() - begun, 20.0);
}

}  // namespace
