// SPDX-License-Identifier: BSD-3-Clause
// RFA_LAYOUT_BALANCED through the C API: every strategy under causal, windowed, document,
// per-entry document and range masks, fp32 and 16-bit, GQA, on 1-8 ranks, forward and backward
// against the float64 reference (the context's sharding helpers place each rank's chunks); the
// rows the ranks hold are a permutation of the sequence, eight chunks each, the same placement
// on every rank, with nearly equal visible work; the layout's refusals (S not a multiple of 8P,
// the context-free position query, CUDA contexts) on every rank.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "capi_reference.hpp"
#include "capi_test_support.hpp"
#include "random_mask_ranges.hpp"
#include "rfa/rfa_mpi.h"

namespace {

using namespace rfa_capi_test;

enum class Docs { none, one_list, per_entry };

struct Case {
  rfa_strategy_t strategy;
  rfa_dtype_t dtype;
  rfa_mask_t mask;
  int64_t chunk;  ///< variant_options' chunk: S = 2 P chunk, so 8P balanced chunks of chunk / 4 tokens
  int64_t window = 0;
  Docs docs = Docs::none;
  int range_entries = 0;  ///< RFA_MASK_RANGES: random entries on the balanced chunks' edges
  std::uint64_t seed = 1;
};

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  const char* docs[] = {"", "_documents", "_entry_documents"};
  return case_label(c.strategy, RFA_LAYOUT_BALANCED, c.dtype, c.mask) +
         (c.mask == RFA_MASK_RANGES ? std::to_string(c.range_entries) + "ranges" : "") + "_chunk" +
         std::to_string(c.chunk) + (c.window > 0 ? "_window" + std::to_string(c.window) : "") + docs[int(c.docs)];
}

constexpr int64_t kBatch = 2, kD = 16;

/// Edges of the 8P balanced chunks and one either side, where ranges and documents meet the
/// chunks a placement moves apart.
std::vector<int64_t> balanced_edges(int64_t S, int P) {
  std::vector<int64_t> edges;
  for (int64_t c = 0; c <= 8 * P; ++c) edges.push_back(c * S / (8 * P));
  return edges;
}

/// Documents skewed towards the end of the sequence (so that the contiguous chunks' work
/// differs), with a boundary on a chunk edge and one beside another.
std::vector<int64_t> skewed_bounds(int64_t S, int P, int shift) {
  const int64_t c = S / (8 * P);
  std::vector<int64_t> b = {0, std::min<int64_t>(S, c + shift), S / 2, S / 2 + 1, S - 2 * c + shift, S};
  std::sort(b.begin(), b.end());
  b.erase(std::unique(b.begin() + 1, b.end() - 1), b.end() - 1);
  for (std::size_t i = 1; i < b.size(); ++i) b[i] = std::max(b[i], b[i - 1]);
  b.back() = S;
  return b;
}

class CapiBalancedLayout : public ::testing::TestWithParam<Case> {};

TEST_P(CapiBalancedLayout, MatchesFloat64Reference) {
  const Case c = GetParam();
  const int P = world_size();
  rfa_options_t o = variant_options(c.strategy, RFA_LAYOUT_BALANCED, c.dtype, c.mask, c.chunk, kD, kBatch);
  const int64_t S = o.seq_total;
  o.window = c.window;
  std::mt19937_64 rng(c.seed * 1000 + std::uint64_t(P));  // the same list on every rank
  const std::vector<rfa_mask_range_t> ranges =
      c.mask == RFA_MASK_RANGES ? rfa_test::random_mask_ranges(rng, S, c.range_entries, balanced_edges(S, P))
                                : std::vector<rfa_mask_range_t>();
  o.mask_ranges = ranges.empty() ? nullptr : ranges.data();
  o.mask_range_count = int64_t(ranges.size());
  const std::vector<int64_t> bounds = skewed_bounds(S, P, 0);
  const std::vector<std::vector<int64_t>> lists = {skewed_bounds(S, P, 1), {}};
  const rfa::reference::DocumentLists packed = rfa::reference::pack_document_lists(lists);
  if (c.docs == Docs::one_list) {
    o.doc_boundaries = bounds.data();
    o.doc_boundary_count = int64_t(bounds.size());
  } else if (c.docs == Docs::per_entry) {
    o.doc_boundaries = packed.bounds.data();
    o.doc_boundary_count = int64_t(packed.bounds.size());
    o.doc_boundary_offsets = packed.offsets.data();
    o.doc_boundary_offset_count = int64_t(packed.offsets.size());
  }
  rfa_context_t ctx = nullptr;
  ASSERT_RFA_OK(rfa_context_create(MPI_COMM_WORLD, &o, &ctx));
  const ReferenceRun ref(o, c.docs == Docs::one_list ? bounds : std::vector<int64_t>(), 61, {}, ranges,
                         c.docs == Docs::per_entry ? lists : std::vector<std::vector<int64_t>>());
  expect_forward_backward_match(ctx, o, ref, variant_tolerance(c.dtype));
  ASSERT_RFA_OK(rfa_context_destroy(ctx));
}

std::vector<Case> cases() {
  std::vector<Case> all;
  std::uint64_t seed = 1;
  for (rfa_strategy_t s :
       {RFA_STRATEGY_RING, RFA_STRATEGY_ULYSSES, RFA_STRATEGY_ALLGATHER, RFA_STRATEGY_HYBRID, RFA_STRATEGY_NEEDED}) {
    all.push_back({s, RFA_DTYPE_FLOAT32, RFA_MASK_CAUSAL, 8});
    all.push_back({s, RFA_DTYPE_FLOAT32, RFA_MASK_RANGES, 8, 0, Docs::none, 5, seed++});
    all.push_back({s, RFA_DTYPE_BFLOAT16, RFA_MASK_CAUSAL, 12, 0, Docs::one_list});
  }
  // Chunks of 1 and 3 tokens; windows that end on a chunk edge and one either side.
  all.push_back({RFA_STRATEGY_RING, RFA_DTYPE_FLOAT32, RFA_MASK_CAUSAL, 4});
  for (int64_t w : {5, 6, 7}) all.push_back({RFA_STRATEGY_RING, RFA_DTYPE_FLOAT32, RFA_MASK_CAUSAL, 24, w});
  all.push_back({RFA_STRATEGY_RING, RFA_DTYPE_FLOAT32, RFA_MASK_NONE, 12, 4});
  all.push_back({RFA_STRATEGY_RING, RFA_DTYPE_FLOAT32, RFA_MASK_NONE, 8});
  // The longest window a caller may give (it hides nothing; the placement's work counts hold it).
  all.push_back({RFA_STRATEGY_RING, RFA_DTYPE_FLOAT32, RFA_MASK_NONE, 8, std::numeric_limits<int64_t>::max()});
  all.push_back({RFA_STRATEGY_RING, RFA_DTYPE_FLOAT16, RFA_MASK_CAUSAL, 8, 0, Docs::per_entry});
  all.push_back({RFA_STRATEGY_HYBRID, RFA_DTYPE_FLOAT32, RFA_MASK_CAUSAL, 8, 0, Docs::per_entry});
  all.push_back({RFA_STRATEGY_RING, RFA_DTYPE_FLOAT32, RFA_MASK_RANGES, 12, 3, Docs::one_list, 8, seed++});
  all.push_back({RFA_STRATEGY_RING, RFA_DTYPE_BFLOAT16, RFA_MASK_RANGES, 8, 0, Docs::none, 1, seed++});
  all.push_back({RFA_STRATEGY_RING, RFA_DTYPE_FLOAT32, RFA_MASK_RANGES, 8, 0, Docs::none, 0, seed++});
  return all;
}

INSTANTIATE_TEST_SUITE_P(Masks, CapiBalancedLayout, ::testing::ValuesIn(cases()), case_name);

/// Every rank's local positions, gathered: rank r's in [r * L, (r + 1) * L).
std::vector<int64_t> all_positions(rfa_context_t ctx, int64_t L) {
  std::vector<int64_t> mine(std::size_t(L), -1), all(std::size_t(L) * std::size_t(world_size()));
  EXPECT_EQ(rfa_context_get_local_positions(ctx, mine.data(), L), RFA_SUCCESS) << rfa_get_last_error_message();
  MPI_Allgather(mine.data(), int(L), MPI_INT64_T, all.data(), int(L), MPI_INT64_T, MPI_COMM_WORLD);
  return all;
}

// Causal documents skewed to the end of the sequence: the ranks' rows are a permutation of the
// sequence, each rank's ascending, in runs of whole chunks; the visible work per rank is within
// 5% of the mean (the contiguous layout's is not); every rank found the same placement (each
// rank's own rows agree with what the others computed for it, checked through the gather).
TEST(CapiBalancedPlacement, RowsArePermutationOfWholeChunksWithEvenWork) {
  const int P = world_size();
  const int64_t S = 8 * P * 16, L = S / P, chunk = S / (8 * P);
  // Documents: one long tail document and many short ones at the start.
  std::vector<int64_t> bounds = {0};
  for (int64_t b = 7; b < S / 4; b += 7) bounds.push_back(b);
  bounds.push_back(S);
  rfa_options_t o =
      variant_options(RFA_STRATEGY_RING, RFA_LAYOUT_BALANCED, RFA_DTYPE_FLOAT32, RFA_MASK_CAUSAL, S / (2 * P), 8, 1);
  o.doc_boundaries = bounds.data();
  o.doc_boundary_count = int64_t(bounds.size());
  auto work_of = [&](const std::vector<int64_t>& rows) {  // visible causal pairs within documents
    double w = 0;
    for (int64_t q : rows) {
      const int64_t start = *(std::upper_bound(bounds.begin(), bounds.end(), q) - 1);
      w += double(q - start + 1);
    }
    return w;
  };
  auto max_over_mean = [&](const std::vector<int64_t>& all) {
    std::vector<double> work;
    for (int r = 0; r < P; ++r)
      work.push_back(work_of(std::vector<int64_t>(all.begin() + r * L, all.begin() + (r + 1) * L)));
    const double mean = std::accumulate(work.begin(), work.end(), 0.0) / P;
    return *std::max_element(work.begin(), work.end()) / mean;
  };
  rfa_context_t ctx = nullptr;
  ASSERT_RFA_OK(rfa_context_create(MPI_COMM_WORLD, &o, &ctx));
  const std::vector<int64_t> all = all_positions(ctx, L);
  ASSERT_RFA_OK(rfa_context_destroy(ctx));
  std::vector<int64_t> sorted = all;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t t = 0; t < S; ++t) ASSERT_EQ(sorted[std::size_t(t)], t) << "position " << t << " held once";
  for (int r = 0; r < P; ++r) {
    const auto first = all.begin() + r * L;
    EXPECT_TRUE(std::is_sorted(first, first + L)) << "rank " << r << "'s rows in position order";
    for (int64_t i = 0; i < L; i += chunk) {
      EXPECT_EQ(first[i] % chunk, 0) << "rank " << r << " row " << i << " starts a chunk";
      for (int64_t j = 1; j < chunk; ++j) EXPECT_EQ(first[i + j], first[i] + j);
    }
  }
  EXPECT_LE(max_over_mean(all), 1.05);

  // The same problem on the contiguous layout is far from even (else this test shows nothing).
  o.layout = RFA_LAYOUT_CONTIGUOUS;
  ASSERT_RFA_OK(rfa_context_create(MPI_COMM_WORLD, &o, &ctx));
  const std::vector<int64_t> contiguous = all_positions(ctx, L);
  ASSERT_RFA_OK(rfa_context_destroy(ctx));
  if (P > 1) {
    EXPECT_GT(max_over_mean(contiguous), 1.5);
  }
}

TEST(CapiBalancedRefusals, OnEveryRank) {
  const int P = world_size();
  rfa_options_t o = variant_options(RFA_STRATEGY_RING, RFA_LAYOUT_BALANCED, RFA_DTYPE_FLOAT32, RFA_MASK_CAUSAL, 8, 8);
  o.seq_total = 8 * P * 2 + 4 * P;  // a multiple of P and 2P (zigzag), not of 8P
  rfa_context_t ctx = nullptr;
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_context_create(MPI_COMM_WORLD, &o, &ctx), "balanced layout",
                   "multiple of 8 * P");
  EXPECT_EQ(ctx, nullptr);

  int64_t local = 0;
  ASSERT_RFA_OK(rfa_layout_local_seq(RFA_LAYOUT_BALANCED, 8 * P * 3, P, &local));
  EXPECT_EQ(local, 8 * 3);
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_layout_local_seq(RFA_LAYOUT_BALANCED, 8 * P + 4, P, &local),
                   "multiple of 8 * P");
  std::vector<int64_t> positions(24);
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT,
                   rfa_layout_positions(RFA_LAYOUT_BALANCED, 8 * P * 3, P, 0, positions.data(), 24),
                   "depend on the mask", "rfa_context_get_local_positions");

  o = variant_options(RFA_STRATEGY_RING, RFA_LAYOUT_BALANCED, RFA_DTYPE_BFLOAT16, RFA_MASK_CAUSAL, 8, 64);
  o.device = RFA_DEVICE_CUDA;
  EXPECT_RFA_FAILS(RFA_ERROR_UNSUPPORTED, rfa_context_create(MPI_COMM_WORLD, &o, &ctx), "balanced layout", "CUDA");
  EXPECT_EQ(ctx, nullptr);
}

}  // namespace
