// SPDX-License-Identifier: BSD-3-Clause
// The automatic strategy's plan chosen by measurement (setup/measured_plan.hpp, RFA_PLAN_MEASURE)
// on 1, 2 and 4 ranks: the variable read and refused, its default (the model alone on one host,
// measuring where the ranks span hosts, made two by the test-only RFA_TEST_HOSTNAME), the short
// list the model's predictions give, the choice from timings (the slowest rank of a round, the
// best round, ties to the model's order; timings the test gives, not speeds), the real timing of
// a plan, and the setup taking the measured winner on every rank.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "comm/agreement.hpp"
#include "comm/mpi/mpi_communicator.hpp"
#include "core/error.hpp"
#include "mpi_test_support.hpp"
#include "scoped_env.hpp"
#include "setup/attention_setup.hpp"
#include "setup/measured_plan.hpp"
#include "small_request.hpp"

namespace rfa::setup {
namespace {

using rfa::test::ScopedEnv;
using rfa::test::world_rank;
using rfa::test::world_size;

/// Plans whose predicted forward + backward take `seconds` (names from their index: ring
/// layouts and grids do not matter to the short list).
std::vector<model::Plan> plans_taking(const std::vector<double>& seconds) {
  std::vector<model::Plan> plans;
  for (double s : seconds) {
    model::Plan p;
    p.choice = {engine::StrategyKind::ring, 0, 1};
    p.prediction.forward.seconds = s / 3;
    p.prediction.backward.seconds = s - s / 3;
    plans.push_back(p);
  }
  return plans;
}

TEST(PlanMeasureMargin, APercentageOrTheModelAlone) {
  // Unset or empty: the model alone on one host, the margin across hosts on two or more.
  for (const char* unset : {static_cast<const char*>(nullptr), ""}) {
    ScopedEnv env("RFA_PLAN_MEASURE", unset);
    EXPECT_EQ(plan_measure_margin(1), 0.0);
    EXPECT_EQ(plan_measure_margin(2), kAcrossHostsMeasureMargin);
    EXPECT_EQ(plan_measure_margin(64), kAcrossHostsMeasureMargin);
  }
  EXPECT_GT(kAcrossHostsMeasureMargin, 0.0);
  // A value given is taken on any number of hosts; `0` is the model alone across hosts too.
  const std::vector<std::pair<const char*, double>> good = {{"0", 0.0}, {"15", 0.15}, {"2.5", 0.025}, {"1000", 10.0}};
  for (const auto& [text, margin] : good) {
    ScopedEnv set("RFA_PLAN_MEASURE", text);
    EXPECT_DOUBLE_EQ(plan_measure_margin(1), margin) << text;
    EXPECT_DOUBLE_EQ(plan_measure_margin(4), margin) << text;
  }
  for (const char* bad : {"-1", "1000.5", "15%", "fast", "nan", "inf", " 15", "15 ", "0x10", "1e1", "1.2.3", "."}) {
    ScopedEnv set("RFA_PLAN_MEASURE", bad);
    try {
      plan_measure_margin(2);
      ADD_FAILURE() << "RFA_PLAN_MEASURE=" << bad << " was taken";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), RFA_ERROR_INVALID_ARGUMENT);
      EXPECT_NE(std::string(e.what()).find(std::string("RFA_PLAN_MEASURE is '") + bad + "'"), std::string::npos)
          << e.what();
    }
  }
}

TEST(PlansToMeasure, ThoseWithinTheMarginOfTheBestInTheModelsOrder) {
  // Around the limit of 1.1 x the best: just under, on it, just over.
  const std::vector<model::Plan> plans = plans_taking({1.0, 1.05, 1.0999, 1.1, 1.1001, 1.5});
  EXPECT_EQ(plans_to_measure(plans, 0.1, 8), (std::vector<std::size_t>{0, 1, 2, 3}));
  EXPECT_EQ(plans_to_measure(plans, 0.0, 8), (std::vector<std::size_t>{0}));
  EXPECT_EQ(plans_to_measure(plans, 0.5, 8), (std::vector<std::size_t>{0, 1, 2, 3, 4, 5}));
  // At most `most`, the model's best ones; never fewer than the first.
  EXPECT_EQ(plans_to_measure(plans, 0.5, 2), (std::vector<std::size_t>{0, 1}));
  EXPECT_EQ(plans_to_measure(plans, 0.5, 0), (std::vector<std::size_t>{0}));
  EXPECT_TRUE(plans_to_measure({}, 0.5, 8).empty());
}

class FastestMeasured : public ::testing::Test {
 protected:
  void SetUp() override { comm_ = comm::make_mpi_communicator(MPI_COMM_WORLD, world_rank()); }
  std::unique_ptr<comm::Communicator> comm_;
};

TEST_F(FastestMeasured, ARoundTakesItsSlowestRankAndAPlanItsBestRound) {
  static_assert(kMeasuredRounds == 2, "the timings below give two rounds");
  const int P = world_size(), me = world_rank();
  // Plan 0: rank 0 slow in the first round, the last rank in the second (one rank: both): every
  // round takes 4, though on two ranks or more each rank has a round of 1. Plan 1: 3 everywhere.
  // Plan 2, the model's last: slow everywhere.
  const std::vector<model::Plan> plans = plans_taking({1.0, 1.1, 1.2});
  auto timings = [&](const model::Plan& plan) -> std::vector<double> {
    const std::size_t i = std::size_t(&plan - plans.data());
    if (i == 0) return {me == 0 ? 4.0 : 1.0, me == P - 1 ? 4.0 : 1.0};
    if (i == 1) return {3.0, 3.0};
    return {9.0, 8.0};
  };
  const MeasuredPlans m = fastest_measured(*comm_, plans, {0, 1, 2}, timings);
  EXPECT_EQ(m.measured, (std::vector<std::size_t>{0, 1, 2}));
  ASSERT_EQ(m.seconds.size(), 3u);
  // On two ranks or more, each rank's own best round (1) would take plan 0.
  EXPECT_EQ(m.fastest, 1u);
  EXPECT_DOUBLE_EQ(m.seconds[0], 4.0);
  EXPECT_DOUBLE_EQ(m.seconds[1], 3.0);
  EXPECT_DOUBLE_EQ(m.seconds[2], 8.0);
  EXPECT_TRUE(rfa::test::same_on_every_rank(std::int64_t(m.fastest)));
}

TEST_F(FastestMeasured, ATieGoesToTheModelsOrderAndOnlyTheShortListRuns) {
  const std::vector<model::Plan> plans = plans_taking({1.0, 1.1, 1.2, 1.3});
  std::vector<std::size_t> ran;
  auto timings = [&](const model::Plan& plan) -> std::vector<double> {
    const std::size_t i = std::size_t(&plan - plans.data());
    ran.push_back(i);
    return {i == 1 ? 1.0 : 2.0, 2.0};
  };
  // Plans 3 and 1 measured, 3 first: both take 2 except plan 1's first round.
  MeasuredPlans m = fastest_measured(*comm_, plans, {3, 1}, timings);
  EXPECT_EQ(ran, (std::vector<std::size_t>{3, 1}));
  EXPECT_EQ(m.fastest, 1u);
  // Plans 2 and 3 alike: the model's earlier one, whatever the order measured.
  ran.clear();
  m = fastest_measured(*comm_, plans, {3, 2}, timings);
  EXPECT_EQ(ran, (std::vector<std::size_t>{3, 2}));
  EXPECT_EQ(m.fastest, 2u);
  const std::string text = explain_measured(plans, m, 0.3);
  EXPECT_EQ(text.rfind(plans[2].name() + ": measured 2000 ms forward + backward, the fastest of 2 plans the model "
                                         "predicts within 30% of its best",
                       0),
            0u)
      << text;
  EXPECT_NE(text.find("; then " + plans[3].name() + " 2000 ms; the model alone: " + plans[0].name()), std::string::npos)
      << text;
}

/// The setup suites' problem with the automatic strategy.
SetupRequest request() {
  SetupRequest r = small_request();
  r.automatic_strategy = true;
  return r;
}

TEST_F(FastestMeasured, APlansRoundsAreTimedOnEveryRank) {
  SetupRequest r = request();
  r.config.dtype = RFA_DTYPE_BFLOAT16;
  for (const engine::StrategyKind kind : {engine::StrategyKind::ring, engine::StrategyKind::allgather}) {
    model::Plan plan;
    plan.choice = {kind, 0, 1};
    plan.layout = RFA_LAYOUT_STRIPE;
    plan.ranks = world_size();
    const std::vector<double> seconds = time_plan_rounds(*comm_, r.config, plan);
    ASSERT_EQ(seconds.size(), std::size_t(kMeasuredRounds));
    for (double s : seconds) EXPECT_GT(s, 0.0);
  }
}

TEST_F(FastestMeasured, NoPlanStartsOnceTheBudgetIsSpent) {
  static_assert(kMeasuredRounds == 2, "the timings below give two rounds");
  const std::vector<model::Plan> plans = plans_taking({1.0, 1.1, 1.2, 1.3});
  std::vector<std::size_t> ran;
  // Plan 0's rounds take 2 on the last rank (1 elsewhere), plan 1's 1, and plan 3, the fastest,
  // 0.5: measuring plans 0 and 1 takes (2 + 2) x 1.5 + (1 + 1) x 1.5 = 9 (the untimed pass
  // reckoned as long as a timed one), the slowest rank's rounds on every rank.
  auto timings = [&](const model::Plan& plan) -> std::vector<double> {
    const std::size_t i = std::size_t(&plan - plans.data());
    ran.push_back(i);
    if (i == 0) return {world_rank() == world_size() - 1 ? 2.0 : 1.0, world_rank() == world_size() - 1 ? 2.0 : 1.0};
    return {i == 3 ? 0.5 : 1.0, i == 3 ? 0.5 : 1.0};
  };
  // A budget of 8: spent 6 after plan 0, so plan 1 starts; spent 9 after it, so no other does.
  MeasuredPlans m = fastest_measured(*comm_, plans, {0, 1, 2, 3}, timings, 8.0);
  EXPECT_EQ(ran, (std::vector<std::size_t>{0, 1}));
  EXPECT_EQ(m.measured, (std::vector<std::size_t>{0, 1}));
  EXPECT_EQ(m.not_timed, 2u);
  EXPECT_DOUBLE_EQ(m.spent_seconds, 9.0);
  EXPECT_EQ(m.fastest, 1u);
  EXPECT_TRUE(rfa::test::same_on_every_rank(std::int64_t(m.measured.size())));
  const std::string text = explain_measured(plans, m, 0.3);
  EXPECT_NE(text.find("the fastest of 2 plans the model predicts within 30% of its best (RFA_PLAN_MEASURE; "
                      "docs/performance-model.md), 2 more left untimed (measuring had taken 9 s of its 8 s budget); "
                      "then "),
            std::string::npos)
      << text;
  // On what plans 0-2 take (12): plan 3 does not start; just above it, it does and wins.
  ran.clear();
  m = fastest_measured(*comm_, plans, {0, 1, 2, 3}, timings, 12.0);
  EXPECT_EQ(ran, (std::vector<std::size_t>{0, 1, 2}));
  EXPECT_EQ(m.not_timed, 1u);
  EXPECT_EQ(m.fastest, 1u);
  ran.clear();
  m = fastest_measured(*comm_, plans, {0, 1, 2, 3}, timings, 12.0 + 1e-6);
  EXPECT_EQ(ran, (std::vector<std::size_t>{0, 1, 2, 3}));
  EXPECT_EQ(m.not_timed, 0u);
  EXPECT_EQ(m.fastest, 3u);
  EXPECT_EQ(explain_measured(plans, m, 0.3).find("untimed"), std::string::npos);
  // A budget the first plan alone spends: the model's first is timed, and only it.
  ran.clear();
  m = fastest_measured(*comm_, plans, {0, 1, 2, 3}, timings, 1.0);
  EXPECT_EQ(ran, (std::vector<std::size_t>{0}));
  EXPECT_EQ(m.not_timed, 3u);
  EXPECT_EQ(m.fastest, 0u);
}

TEST_F(FastestMeasured, APlanOutOfMemoryIsLeftOutAndOtherErrorsAreRaised) {
  const std::vector<model::Plan> plans = plans_taking({1.0, 1.1, 1.2});
  // Plan 0, the model's first and the fastest if it ran, does not fit on the last rank.
  auto plan0_refused = [&](const model::Plan& plan) -> std::vector<double> {
    const std::size_t i = std::size_t(&plan - plans.data());
    if (i == 0) {
      comm::check_everywhere(*comm_, [&] {
        if (world_rank() == world_size() - 1) fail(RFA_ERROR_OUT_OF_MEMORY, "the test's plan 0 does not fit");
      });
    }
    return {i == 0 ? 1.0 : 3.0 + double(i), 5.0};
  };
  MeasuredPlans m = fastest_measured(*comm_, plans, {0, 1, 2}, plan0_refused);
  EXPECT_EQ(m.fastest, 1u);
  EXPECT_FALSE(m.all_refused);
  EXPECT_TRUE(std::isinf(m.seconds[0]));
  std::string text = explain_measured(plans, m, 0.3);
  EXPECT_EQ(text.rfind(plans[1].name() + ": measured 4000 ms", 0), 0u) << text;
  EXPECT_NE(text.find("; then " + plans[0].name() + " out of memory, "), std::string::npos) << text;
  // None fits: the model's first stands, and says so.
  auto none_fits = [&](const model::Plan&) -> std::vector<double> {
    comm::check_everywhere(*comm_, [&] { fail(RFA_ERROR_OUT_OF_MEMORY, "nothing fits"); });
    return {1.0, 1.0};
  };
  m = fastest_measured(*comm_, plans, {1, 2}, none_fits);
  EXPECT_TRUE(m.all_refused);
  EXPECT_EQ(m.fastest, 0u);
  text = explain_measured(plans, m, 0.3);
  EXPECT_EQ(text.rfind(plans[0].name() + ": the model's first plan: every plan it predicts within 30% of its best ran "
                                         "out of memory",
                       0),
            0u)
      << text;
  // Any other failure is the creation's.
  auto invalid = [&](const model::Plan&) -> std::vector<double> {
    comm::check_everywhere(*comm_, [&] { fail(RFA_ERROR_INVALID_ARGUMENT, "not this plan"); });
    return {1.0, 1.0};
  };
  try {
    fastest_measured(*comm_, plans, {0, 1}, invalid);
    ADD_FAILURE() << "an invalid plan was left out instead of raised";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), RFA_ERROR_INVALID_ARGUMENT);
  }
}

/// "<name> <ms> ms" entries after "; then " up to "; the model alone": the losers' times.
std::vector<double> losers_ms(const std::string& plan) {
  std::vector<double> ms;
  const std::size_t then = plan.find("; then "), alone = plan.find("; the model alone");
  if (then == std::string::npos || alone == std::string::npos) return ms;
  const std::string list = plan.substr(then + 7, alone - then - 7);
  for (std::size_t at = 0; at < list.size();) {
    const std::size_t end = std::min(list.find(" ms", at), list.size());
    const std::size_t space = list.rfind(' ', end - 1);
    ms.push_back(std::atof(list.substr(space + 1, end - space - 1).c_str()));
    at = end + 5;  // " ms, "
  }
  return ms;
}

TEST(MeasuredSetup, TheFastestMeasuredPlanRunsOnEveryRank) {
  ScopedEnv measure("RFA_PLAN_MEASURE", "1000");  // every plan, up to kMostMeasuredPlans
  AttentionSetup s = set_up_attention(MPI_COMM_WORLD, request());
  ASSERT_TRUE(s.engine);
  const std::string winner = model::Plan{s.strategy, s.config.layout, world_size(), {}}.name();
  EXPECT_EQ(s.plan.rfind("automatic: " + winner + ": measured ", 0), 0u) << s.plan;
  EXPECT_NE(s.plan.find("; the model alone: "), std::string::npos) << s.plan;
  EXPECT_EQ(s.engine->kind(), s.strategy.kind);
  EXPECT_EQ(s.engine->config().layout, s.config.layout);
  EXPECT_TRUE(rfa::test::same_on_every_rank(std::int64_t(s.strategy.kind)));
  EXPECT_TRUE(rfa::test::same_on_every_rank(s.strategy.ulysses_degree));
  EXPECT_TRUE(rfa::test::same_on_every_rank(std::int64_t(s.config.layout)));
  // The winner's time is the least of those the text gives (every plan fits 1000%: at least the
  // three ring layouts and the all-gather are measured).
  const std::size_t at = s.plan.find(": measured ") + 11;
  const double winner_ms = std::atof(s.plan.c_str() + at);
  const std::vector<double> others = losers_ms(s.plan);
  EXPECT_GE(others.size(), 3u) << s.plan;
  for (double ms : others) EXPECT_LE(winner_ms, ms) << s.plan;
}

TEST(MeasuredSetup, ZeroIsTheModelAlone) {
  ScopedEnv measure("RFA_PLAN_MEASURE", "0");
  const AttentionSetup s = set_up_attention(MPI_COMM_WORLD, request());
  EXPECT_EQ(s.plan.find("measured"), std::string::npos) << s.plan;
  EXPECT_NE(s.plan.find(": predicted "), std::string::npos) << s.plan;
}

/// The unmasked problem: the three ring layouts' predictions are equal, so any margin above 0
/// short-lists at least two plans.
SetupRequest unmasked_request() {
  SetupRequest r = request();
  r.config.mask = RFA_MASK_NONE;
  return r;
}

TEST(MeasuredSetup, UnsetOnOneHostIsTheModelAlone) {
  ScopedEnv measure("RFA_PLAN_MEASURE", nullptr);
  ScopedEnv host("RFA_TEST_HOSTNAME", "one-node");
  const AttentionSetup s = set_up_attention(MPI_COMM_WORLD, unmasked_request());
  EXPECT_EQ(s.plan.find("measured"), std::string::npos) << s.plan;
  EXPECT_NE(s.plan.find(": predicted "), std::string::npos) << s.plan;
}

TEST(MeasuredSetup, UnsetAcrossHostsMeasuresByDefault) {
  if (world_size() == 1) GTEST_SKIP() << "one rank runs on one host";
  ScopedEnv measure("RFA_PLAN_MEASURE", nullptr);
  // Two hosts, whatever the ranks' count: even ranks on one, odd ranks on the other.
  ScopedEnv host("RFA_TEST_HOSTNAME", world_rank() % 2 ? "node-b" : "node-a");
  const AttentionSetup s = set_up_attention(MPI_COMM_WORLD, unmasked_request());
  ASSERT_TRUE(s.engine);
  const std::string winner = model::Plan{s.strategy, s.config.layout, world_size(), {}}.name();
  EXPECT_EQ(s.plan.rfind("automatic: " + winner + ": measured ", 0), 0u) << s.plan;
  EXPECT_NE(s.plan.find(" the model predicts within 15% of its best (RFA_PLAN_MEASURE unset: the default where the "
                        "ranks span 2 hosts; "),
            std::string::npos)
      << s.plan;
  EXPECT_EQ(s.engine->kind(), s.strategy.kind);
  EXPECT_TRUE(rfa::test::same_on_every_rank(std::int64_t(s.strategy.kind)));
  EXPECT_TRUE(rfa::test::same_on_every_rank(std::int64_t(s.config.layout)));
  // `0` turns it off across hosts too.
  ScopedEnv off("RFA_PLAN_MEASURE", "0");
  const AttentionSetup alone = set_up_attention(MPI_COMM_WORLD, unmasked_request());
  EXPECT_EQ(alone.plan.find("measured"), std::string::npos) << alone.plan;
}

TEST(MeasuredSetup, TheCallersStrategyIsNotMeasured) {
  ScopedEnv measure("RFA_PLAN_MEASURE", "bad, but not read");
  SetupRequest r = request();
  r.automatic_strategy = false;
  const AttentionSetup s = set_up_attention(MPI_COMM_WORLD, r);
  EXPECT_EQ(s.plan, "ring, zigzag: chosen by the test");
}

TEST(MeasuredSetup, ABadOrDifferingValueFailsEveryRank) {
  {
    ScopedEnv measure("RFA_PLAN_MEASURE", "lots");
    try {
      set_up_attention(MPI_COMM_WORLD, request());
      ADD_FAILURE() << "RFA_PLAN_MEASURE=lots was taken";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), RFA_ERROR_INVALID_ARGUMENT);
      EXPECT_NE(std::string(e.what()).find("RFA_PLAN_MEASURE is 'lots'"), std::string::npos) << e.what();
    }
  }
  if (world_size() == 1) return;
  ScopedEnv measure("RFA_PLAN_MEASURE", world_rank() == 0 ? "20" : "30");
  try {
    set_up_attention(MPI_COMM_WORLD, request());
    ADD_FAILURE() << "ranks measured with different margins";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), RFA_ERROR_INVALID_USAGE);
    EXPECT_NE(std::string(e.what()).find("RFA_PLAN_MEASURE"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace rfa::setup
