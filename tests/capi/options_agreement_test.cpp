// SPDX-License-Identifier: BSD-3-Clause
// Every field of rfa_options_t is agreed at creation: for each one, the last rank passes a
// different value than the others, and every rank must fail with RFA_ERROR_INVALID_USAGE
// naming that field, without a context. A field the creation agreement forgot would let the
// ranks build contexts for different problems, so a field appended to rfa_options_t fails to
// compile here until it has a case.
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include "capi_test_support.hpp"
#include "rfa/rfa_mpi.h"

namespace {

using namespace rfa_capi_test;

static_assert(sizeof(rfa_options_t) <= offsetof(rfa_options_t, value_head_dim) + 8,
              "rfa_options_t gained a field: add its case to kFields below (and to capi/creation_agreement.cpp)");

rfa_options_t valid_options() {
  rfa_options_t o = small_problem(RFA_LAYOUT_CONTIGUOUS, 8);
  o.check_values = RFA_VALUE_CHECKS_OFF;
  o.cuda_kernels = RFA_CUDA_KERNELS_AUTO;
  return o;
}

// The boundaries a rank points its options at (two documents), kept alive for the call.
std::vector<int64_t> two_documents(int64_t seq_total, int64_t split) { return {0, split, seq_total}; }

// The mask's ranges a rank points its options at, kept alive for the call: every rank starts
// with one full entry over the whole sequence.
std::vector<rfa_mask_range_t> g_ranges;
void point_at_ranges(rfa_options_t& o) {
  o.mask = RFA_MASK_RANGES;
  o.mask_ranges = g_ranges.data();
  o.mask_range_count = int64_t(g_ranges.size());
}

struct Field {
  const char* name;  // as the message names it: "options.<name>"
  void (*change)(rfa_options_t& o, std::vector<int64_t>& bounds);
};

const Field kFields[] = {
    {"layout", [](rfa_options_t& o, std::vector<int64_t>&) { o.layout = RFA_LAYOUT_STRIPE; }},
    {"mask", [](rfa_options_t& o, std::vector<int64_t>&) { o.mask = RFA_MASK_NONE; }},
    {"dtype", [](rfa_options_t& o, std::vector<int64_t>&) { o.dtype = RFA_DTYPE_BFLOAT16; }},
    {"ring_order", [](rfa_options_t& o, std::vector<int64_t>&) { o.ring_order = RFA_RING_ORDER_TOPOLOGY; }},
    {"softmax_scale", [](rfa_options_t& o, std::vector<int64_t>&) { o.softmax_scale = 0.125; }},
    {"batch", [](rfa_options_t& o, std::vector<int64_t>&) { o.batch = 2; }},
    {"seq_total", [](rfa_options_t& o, std::vector<int64_t>&) { o.seq_total *= 2; }},
    {"heads", [](rfa_options_t& o, std::vector<int64_t>&) { o.heads = 8; }},
    {"kv_heads", [](rfa_options_t& o, std::vector<int64_t>&) { o.kv_heads = 2; }},
    {"head_dim", [](rfa_options_t& o, std::vector<int64_t>&) { o.head_dim = 16; }},
    {"device", [](rfa_options_t& o, std::vector<int64_t>&) { o.device = RFA_DEVICE_CUDA; }},
    {"transport", [](rfa_options_t& o, std::vector<int64_t>&) { o.transport = RFA_TRANSPORT_MPI; }},
    {"timeout_s", [](rfa_options_t& o, std::vector<int64_t>&) { o.timeout_s = 77.0; }},
    {"strategy", [](rfa_options_t& o, std::vector<int64_t>&) { o.strategy = RFA_STRATEGY_ALLGATHER; }},
    {"ulysses_degree", [](rfa_options_t& o, std::vector<int64_t>&) { o.ulysses_degree = 1; }},
    {"window", [](rfa_options_t& o, std::vector<int64_t>&) { o.window = 3; }},
    {"doc_boundary_count",
     [](rfa_options_t& o, std::vector<int64_t>& bounds) {
       bounds = two_documents(o.seq_total, 3);
       o.doc_boundaries = bounds.data();
       o.doc_boundary_count = int64_t(bounds.size());
     }},
    {"doc_boundaries",
     [](rfa_options_t& o, std::vector<int64_t>& bounds) {
       bounds = two_documents(o.seq_total, 5);  // the others split at 3: same count, other values
       o.doc_boundaries = bounds.data();
       o.doc_boundary_count = int64_t(bounds.size());
     }},
    {"check_values", [](rfa_options_t& o, std::vector<int64_t>&) { o.check_values = RFA_VALUE_CHECKS_ON; }},
    {"cuda_kernels", [](rfa_options_t& o, std::vector<int64_t>&) { o.cuda_kernels = RFA_CUDA_KERNELS_RFA; }},
    {"deterministic", [](rfa_options_t& o, std::vector<int64_t>&) { o.deterministic = 1; }},
    {"attention_sinks", [](rfa_options_t& o, std::vector<int64_t>&) { o.attention_sinks = 1; }},
    {"softcap", [](rfa_options_t& o, std::vector<int64_t>&) { o.softcap = 30.0; }},
    {"mask_range_count",
     [](rfa_options_t& o, std::vector<int64_t>&) {
       g_ranges.push_back({0, 1, 0, 1, 0, 0, RFA_RANGE_FULL});
       point_at_ranges(o);
     }},
    {"mask_ranges",
     [](rfa_options_t& o, std::vector<int64_t>&) {
       g_ranges[0].kind = RFA_RANGE_CAUSAL;  // the same count, another entry
       point_at_ranges(o);
     }},
    {"doc_boundary_offset_count",
     [](rfa_options_t& o, std::vector<int64_t>& bounds) {
       bounds = two_documents(o.seq_total, 3);  // every entry of the batch its own list: the same lists
       o.doc_boundaries = bounds.data();
       o.doc_boundary_count = int64_t(bounds.size());
       static int64_t offsets[2] = {0, 3};
       o.doc_boundary_offsets = offsets;
       o.doc_boundary_offset_count = 2;
     }},
    {"doc_boundary_offsets",
     [](rfa_options_t& o, std::vector<int64_t>&) {
       static int64_t offsets[3] = {0, 0, 3};  // entry 0 one document, entry 1 the two: the same boundaries
       o.doc_boundary_offsets = offsets;
     }},
    {"value_head_dim", [](rfa_options_t& o, std::vector<int64_t>&) { o.value_head_dim = o.head_dim + 8; }},
};

class OptionsAgreement : public ::testing::TestWithParam<Field> {};

TEST_P(OptionsAgreement, OneRankDifferingFailsEveryRank) {
  if (world_size() < 2) GTEST_SKIP() << "needs 2 ranks";
  rfa_options_t o = valid_options();
  std::vector<int64_t> bounds;
  if (std::string(GetParam().name) == "doc_boundaries") {  // every rank has documents; the values differ
    bounds = two_documents(o.seq_total, 3);
    o.doc_boundaries = bounds.data();
    o.doc_boundary_count = int64_t(bounds.size());
  }
  if (std::string(GetParam().name) == "doc_boundary_offset_count") {  // every rank has documents
    bounds = two_documents(o.seq_total, 3);
    o.doc_boundaries = bounds.data();
    o.doc_boundary_count = int64_t(bounds.size());
  }
  static int64_t both_entries[3] = {0, 3, 3};                    // entry 0 the two documents, entry 1 one
  if (std::string(GetParam().name) == "doc_boundary_offsets") {  // two entries with their lists; the cut differs
    o.batch = 2;
    bounds = two_documents(o.seq_total, 3);
    o.doc_boundaries = bounds.data();
    o.doc_boundary_count = int64_t(bounds.size());
    o.doc_boundary_offsets = both_entries;
    o.doc_boundary_offset_count = 3;
  }
  if (std::string(GetParam().name).rfind("mask_range", 0) == 0) {  // every rank has ranges; the list differs
    g_ranges = {{0, o.seq_total, 0, o.seq_total, 0, 0, RFA_RANGE_FULL}};
    point_at_ranges(o);
  }
  const bool differs = world_rank() == world_size() - 1;
  if (differs) GetParam().change(o, bounds);
  rfa_context_t ctx = reinterpret_cast<rfa_context_t>(&ctx);
  const std::string field = std::string("options.") + GetParam().name;
  const std::string last = "rank " + std::to_string(world_size() - 1) + " passes";
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_USAGE, rfa_context_create(MPI_COMM_WORLD, &o, &ctx), field.c_str(),
                   "rank 0 passes", last.c_str());
  EXPECT_EQ(ctx, nullptr) << "no context may exist after a failed creation";
}

// A value head dim of 0 means head_dim: a rank that says so explicitly agrees with one that
// leaves the default, and the context reports 0, so that its options given another head_dim
// make a context of one head dim again.
TEST(OptionsAgreement, ValueHeadDimZeroIsHeadDim) {
  rfa_options_t o = valid_options();
  if (world_rank() % 2 == 1) o.value_head_dim = o.head_dim;
  rfa_context_t ctx = nullptr;
  ASSERT_RFA_OK(rfa_context_create(MPI_COMM_WORLD, &o, &ctx));
  rfa_options_t got;
  rfa_options_init(&got);
  ASSERT_RFA_OK(rfa_context_get_options(ctx, &got));
  EXPECT_EQ(got.value_head_dim, 0);
  ASSERT_RFA_OK(rfa_context_destroy(ctx));
  got.head_dim = 2 * o.head_dim;
  ASSERT_RFA_OK(rfa_context_create(MPI_COMM_WORLD, &got, &ctx));
  ASSERT_RFA_OK(rfa_context_get_options(ctx, &got));
  EXPECT_EQ(got.value_head_dim, 0) << "one head dim again, the new one";
  ASSERT_RFA_OK(rfa_context_destroy(ctx));
}

// A real-valued field that differs in its last bit: the message prints both values apart.
TEST(OptionsAgreement, ValuesThatDifferArePrintedApart) {
  if (world_size() < 2) GTEST_SKIP() << "needs 2 ranks";
  rfa_options_t o = valid_options();
  o.softmax_scale = 0.1;
  if (world_rank() == world_size() - 1) o.softmax_scale = std::nextafter(0.1, 1.0);
  rfa_context_t ctx = nullptr;
  const std::string last = "rank " + std::to_string(world_size() - 1) + " passes 0.10000000000000002";
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_USAGE, rfa_context_create(MPI_COMM_WORLD, &o, &ctx), "options.softmax_scale",
                   "rank 0 passes 0.1,", last.c_str());
  EXPECT_EQ(ctx, nullptr);
}

INSTANTIATE_TEST_SUITE_P(EveryField, OptionsAgreement, ::testing::ValuesIn(kFields),
                         [](const ::testing::TestParamInfo<Field>& info) { return std::string(info.param.name); });

}  // namespace
