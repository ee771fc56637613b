// SPDX-License-Identifier: BSD-3-Clause
// RFA_STRATEGY_AUTO through the C API: the context reports a concrete strategy, degree and layout,
// the same on every rank, and rfa_context_get_plan says why; what it cannot take fails on every
// rank with the reason. (The results under the chosen plan: capi_forward_backward_test's
// Automatic cases.)
#include <cstdlib>
#include <string>
#include <vector>

#include "capi_test_support.hpp"
#include "rfa/rfa_mpi.h"

using namespace rfa_capi_test;

namespace {

rfa_options_t problem() {
  rfa_options_t o;
  EXPECT_EQ(rfa_options_init(&o), RFA_SUCCESS);
  o.batch = 1;
  o.seq_total = 2 * world_size() * 32;
  o.heads = 4;
  o.kv_heads = 2;
  o.head_dim = 16;
  o.mask = RFA_MASK_CAUSAL;
  o.strategy = RFA_STRATEGY_AUTO;
  return o;
}

/// The same on every rank: compares `value` with rank 0's.
bool same_everywhere(const std::string& text) {
  unsigned long long h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char ch : text) h = (h ^ ch) * 1099511628211ull;
  unsigned long long lo = h, hi = h;
  MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
  return lo == hi;
}

TEST(AutoStrategy, ReportsOnePlanEverywhereAndWhy) {
  rfa_options_t o = problem();
  rfa_context_t ctx = nullptr;
  ASSERT_RFA_OK(rfa_context_create(MPI_COMM_WORLD, &o, &ctx));
  rfa_options_t got;
  ASSERT_RFA_OK(rfa_options_init(&got));
  ASSERT_RFA_OK(rfa_context_get_options(ctx, &got));
  EXPECT_GE(int(got.strategy), int(RFA_STRATEGY_RING));
  EXPECT_LE(int(got.strategy), int(RFA_STRATEGY_HYBRID));
  if (got.strategy == RFA_STRATEGY_HYBRID) {
    EXPECT_GE(got.ulysses_degree, 2);
  } else {
    EXPECT_EQ(got.ulysses_degree, 0);
  }
  char text[512];
  ASSERT_RFA_OK(rfa_context_get_plan(ctx, text, sizeof text));
  const std::string plan = text;
  EXPECT_EQ(plan.rfind("automatic: ", 0), 0u) << plan;
  EXPECT_NE(plan.find("predicted"), std::string::npos) << plan;
  EXPECT_TRUE(same_everywhere(plan + std::to_string(int(got.strategy)) + "/" + std::to_string(got.ulysses_degree) +
                              "/" + std::to_string(int(got.layout))))
      << "the ranks chose differently: " << plan;
  // A short buffer gets the text cut, NUL-terminated.
  char shorter[8];
  ASSERT_RFA_OK(rfa_context_get_plan(ctx, shorter, sizeof shorter));
  EXPECT_EQ(std::string(shorter), plan.substr(0, 7));
  // Room for the NUL alone: an empty text.
  char one[1] = {'x'};
  ASSERT_RFA_OK(rfa_context_get_plan(ctx, one, 1));
  EXPECT_EQ(one[0], '\0');
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_context_get_plan(ctx, shorter, 0), "capacity");
  ASSERT_RFA_OK(rfa_context_destroy(ctx));
}

/// The layout a plan's text names, "<strategy>, <layout><marker>...", or "" where it does not.
std::string layout_in_plan(const std::string& plan, const std::string& marker) {
  const std::size_t comma = plan.find(", "), end = plan.find(marker);
  if (comma == std::string::npos || end == std::string::npos || comma > end) return "";
  return plan.substr(comma + 2, end - comma - 2);
}

const char* layout_name(rfa_layout_t layout) {
  switch (layout) {
    case RFA_LAYOUT_CONTIGUOUS: return "contiguous";
    case RFA_LAYOUT_ZIGZAG: return "zigzag";
    case RFA_LAYOUT_STRIPE: return "stripe";
    case RFA_LAYOUT_BALANCED: return "balanced";
  }
  return "?";
}

// The layout the automatic strategy chose is the one the context reports, not the caller's:
// the plan, which weighs every layout whatever the caller gave, is the same from the contiguous
// and the stripe layout, so it differs from at least one of them; each time the reported layout
// is the one the plan names ("automatic: <strategy>, <layout>: predicted ..."), and its rows
// are the context's wherever the layout alone gives them.
TEST(AutoStrategy, TheChosenLayoutIsReported) {
  std::vector<std::string> chosen;
  for (const rfa_layout_t callers : {RFA_LAYOUT_CONTIGUOUS, RFA_LAYOUT_STRIPE}) {
    SCOPED_TRACE(std::string("the caller's layout: ") + layout_name(callers));
    rfa_options_t o = problem();
    o.layout = callers;
    rfa_context_t ctx = nullptr;
    ASSERT_RFA_OK(rfa_context_create(MPI_COMM_WORLD, &o, &ctx));
    rfa_options_t got;
    ASSERT_RFA_OK(rfa_options_init(&got));
    ASSERT_RFA_OK(rfa_context_get_options(ctx, &got));
    char text[512];
    ASSERT_RFA_OK(rfa_context_get_plan(ctx, text, sizeof text));
    const std::string plan = text;
    chosen.push_back(layout_in_plan(plan, ": predicted"));
    ASSERT_FALSE(chosen.back().empty()) << plan;
    EXPECT_EQ(chosen.back(), layout_name(got.layout)) << plan;
    if (got.strategy != RFA_STRATEGY_HYBRID && got.layout != RFA_LAYOUT_BALANCED) {
      int64_t L = 0;
      int position = -1;
      ASSERT_RFA_OK(rfa_context_get_local_seq(ctx, &L));
      ASSERT_RFA_OK(rfa_context_get_position(ctx, &position));
      std::vector<int64_t> mine(static_cast<std::size_t>(L)), from_layout(static_cast<std::size_t>(L));
      ASSERT_RFA_OK(rfa_context_get_local_positions(ctx, mine.data(), L));
      ASSERT_RFA_OK(rfa_layout_positions(got.layout, o.seq_total, world_size(), position, from_layout.data(), L));
      EXPECT_EQ(mine, from_layout) << plan;
    }
    ASSERT_RFA_OK(rfa_context_destroy(ctx));
  }
  EXPECT_EQ(chosen[0], chosen[1]) << "the plan changed with the caller's layout";
}

TEST(AutoStrategy, AChosenStrategyIsSaidToBeTheCallers) {
  rfa_options_t o = problem();
  o.strategy = RFA_STRATEGY_RING;
  o.layout = RFA_LAYOUT_STRIPE;
  rfa_context_t ctx = nullptr;
  ASSERT_RFA_OK(rfa_context_create(MPI_COMM_WORLD, &o, &ctx));
  char text[256];
  ASSERT_RFA_OK(rfa_context_get_plan(ctx, text, sizeof text));
  EXPECT_EQ(std::string(text), "ring, stripe: chosen by the caller (options.strategy)");
  ASSERT_RFA_OK(rfa_context_destroy(ctx));
}

TEST(AutoStrategy, ADegreeWithAutoIsRefusedEverywhere) {
  rfa_options_t o = problem();
  o.ulysses_degree = 2;
  rfa_context_t ctx = nullptr;
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_context_create(MPI_COMM_WORLD, &o, &ctx),
                   "RFA_STRATEGY_AUTO chooses the degree");
  EXPECT_EQ(ctx, nullptr);
}

// Where no plan fits, the reason is the one a chosen strategy would be given, with its code: a
// head dim the kernels lack is not said to be a sequence that does not split.
TEST(AutoStrategy, NoPlanFitsSaysWhy) {
  rfa_options_t o = problem();
  o.head_dim = 7;
  rfa_context_t ctx = nullptr;
  EXPECT_RFA_FAILS(RFA_ERROR_UNSUPPORTED, rfa_context_create(MPI_COMM_WORLD, &o, &ctx), "head_dim 7");
  EXPECT_EQ(ctx, nullptr);
  if (world_size() < 2) return;
  o = problem();
  o.seq_total = 2 * world_size() * 32 + 1;  // odd: splits over no even number of ranks
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_context_create(MPI_COMM_WORLD, &o, &ctx), "no strategy fits",
                   "a multiple of P");
  EXPECT_EQ(ctx, nullptr);
}

TEST(AutoStrategy, AMachineFigureThatDoesNotParseIsRefusedEverywhere) {
  // Alike on every rank but not a figure: every rank fails with the reason.
  setenv("RFA_PLAN_KERNEL_RATE", "fast,100", 1);
  rfa_options_t o = problem();
  rfa_context_t ctx = nullptr;
  EXPECT_RFA_FAILS(RFA_ERROR_INVALID_ARGUMENT, rfa_context_create(MPI_COMM_WORLD, &o, &ctx),
                   "RFA_PLAN_KERNEL_RATE is 'fast,100'");
  EXPECT_EQ(ctx, nullptr);
  unsetenv("RFA_PLAN_KERNEL_RATE");
  if (world_size() > 1) {
    // A valid figure on rank 0 alone would give the ranks different plans: refused everywhere,
    // each variable, naming it.
    for (const char* name : {"RFA_PLAN_KERNEL_RATE", "RFA_PLAN_LINKS"}) {
      if (world_rank() == 0) setenv(name, std::string(name) == "RFA_PLAN_LINKS" ? "0.5,100,0.1,200" : "1000,800", 1);
      const std::string says = std::string(name) + " differs between ranks";
      EXPECT_RFA_FAILS(RFA_ERROR_INVALID_USAGE, rfa_context_create(MPI_COMM_WORLD, &o, &ctx), says.c_str());
      EXPECT_EQ(ctx, nullptr);
      unsetenv(name);
    }
  }
  // Slow links and fast kernels are figures the plan takes: creation succeeds.
  setenv("RFA_PLAN_LINKS", "0.5,100,0.1,200", 1);
  setenv("RFA_PLAN_KERNEL_RATE", "1000,800", 1);
  ASSERT_RFA_OK(rfa_context_create(MPI_COMM_WORLD, &o, &ctx));
  ASSERT_RFA_OK(rfa_context_destroy(ctx));
  unsetenv("RFA_PLAN_LINKS");
  unsetenv("RFA_PLAN_KERNEL_RATE");
}

// RFA_PLAN_MEASURE through the C API: the plan the context reports and runs is the one the text
// says was measured fastest, the same on every rank, and its calls run (the choice's logic:
// rfa_measured_plan_test).
TEST(AutoStrategy, AMeasuredPlanIsTheOneReportedAndRun) {
  rfa_options_t o = problem();
  o.dtype = RFA_DTYPE_FLOAT32;
  rfa_context_t ctx = nullptr;
  setenv("RFA_PLAN_MEASURE", "1000", 1);
  const rfa_result_t created = rfa_context_create(MPI_COMM_WORLD, &o, &ctx);
  unsetenv("RFA_PLAN_MEASURE");  // before any assertion can end the test
  ASSERT_RFA_OK(created);
  rfa_options_t got;
  ASSERT_RFA_OK(rfa_options_init(&got));
  ASSERT_RFA_OK(rfa_context_get_options(ctx, &got));
  char text[1024];
  ASSERT_RFA_OK(rfa_context_get_plan(ctx, text, sizeof text));
  const std::string plan = text;
  const std::string layout = layout_in_plan(plan, ": measured ");
  ASSERT_FALSE(layout.empty()) << plan;
  EXPECT_EQ(layout, layout_name(got.layout)) << plan;
  EXPECT_NE(plan.find("; the model alone: "), std::string::npos) << plan;
  EXPECT_TRUE(same_everywhere(plan + std::to_string(int(got.strategy)) + "/" + std::to_string(got.ulysses_degree)))
      << "the ranks chose differently: " << plan;
  // The context runs: every value 1 gives outputs of 1.
  int64_t L = 0;
  ASSERT_RFA_OK(rfa_context_get_local_seq(ctx, &L));
  std::vector<float> q(std::size_t(L * o.heads * o.head_dim), 1.0f), kv(std::size_t(L * o.kv_heads * o.head_dim), 1.0f);
  std::vector<float> out(q.size()), lse(std::size_t(L * o.heads));
  ASSERT_RFA_OK(rfa_forward(ctx, q.data(), kv.data(), kv.data(), out.data(), lse.data()));
  for (float x : out) ASSERT_FLOAT_EQ(x, 1.0f);
  ASSERT_RFA_OK(rfa_context_destroy(ctx));
}

}  // namespace
