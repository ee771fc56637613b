// SPDX-License-Identifier: BSD-3-Clause
// The arithmetic behind the main job's and the ring benchmark's figures (perf/ring), and the
// one JSON writer (perf/common), on hand-made samples: no MPI, no timing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "result_json.hpp"
#include "ring_measure.hpp"
#include "run_options.hpp"

namespace rfa::perf {
namespace {

/// A pass of `reps` repetitions on two ranks: rank 0 takes a[r], rank 1 b[r] seconds.
PassSamples two_ranks(const std::vector<double>& a, const std::vector<double>& b) {
  PassSamples p;
  for (std::size_t r = 0; r < a.size(); ++r) {
    p.total.push_back({a[r], b[r]});
    p.wait.push_back({0.0, 0.0});
  }
  return p;
}

TEST(HiddenFraction, IsOneMinusExposedOverCommunicationAlone) {
  EXPECT_DOUBLE_EQ(hidden_fraction(10.0, 10.0, 2.0), 1.0);  // nothing exposed
  EXPECT_DOUBLE_EQ(hidden_fraction(12.0, 10.0, 2.0), 0.0);  // all of it exposed
  EXPECT_DOUBLE_EQ(hidden_fraction(11.0, 10.0, 2.0), 0.5);
  EXPECT_DOUBLE_EQ(hidden_fraction(9.0, 10.0, 2.0), 1.0);   // faster than compute alone: clamped
  EXPECT_DOUBLE_EQ(hidden_fraction(20.0, 10.0, 2.0), 0.0);  // exposed more than it takes: clamped
}

TEST(HiddenFraction, SamplesEveryRepetitionAndRankAgainstItsOwnRuns) {
  const PassSamples full = two_ranks({11, 12}, {10, 11});
  const PassSamples compute = two_ranks({10, 10}, {10, 10});
  const PassSamples comm = two_ranks({2, 2}, {2, 4});
  const std::vector<double> h = hidden_samples(full, compute, comm);
  ASSERT_EQ(h.size(), 4u);  // [rep 0: rank 0, rank 1], [rep 1: rank 0, rank 1]
  EXPECT_DOUBLE_EQ(h[0], 0.5);
  EXPECT_DOUBLE_EQ(h[1], 1.0);
  EXPECT_DOUBLE_EQ(h[2], 0.0);
  EXPECT_DOUBLE_EQ(h[3], 0.75);
}

TEST(OverlapMeasurable, OnlyWhenCommunicationStandsOutOfTheNoise) {
  const PassSamples steady = two_ranks({10.0, 10.1, 10.05}, {9.9, 10.0, 10.0});
  const PassSamples noisy = two_ranks({10.0, 14.0, 12.0}, {9.0, 13.0, 11.0});
  const PassSamples comm = two_ranks({1.0, 1.0, 1.0}, {1.0, 1.0, 1.0});
  EXPECT_TRUE(overlap_measurable(steady, comm));  // 1 s of communication, 0.1 s of spread
  EXPECT_FALSE(overlap_measurable(noisy, comm));  // 4 s of spread hides it
  const PassSamples once = two_ranks({10.0}, {10.0});
  EXPECT_FALSE(overlap_measurable(once, two_ranks({1.0}, {1.0})));  // one repetition: no noise known
}

TEST(RingCase, EachRepetitionIsItsSlowestRankWithTheRankSpreadAndTheHiddenShare) {
  RunOptions o;
  o.seq = 1024;
  const PassSamples full = two_ranks({2.0, 3.0}, {4.0, 1.0});
  const std::vector<double> hidden = {0.2, 0.6, 1.0, 0.0};
  const BenchCase c = ring_case("ring/fwd/zigzag", o, "zigzag", full, PassFlops{8e12, 16e12}, 4e12, &hidden);
  ASSERT_EQ(c.repetitions.size(), 2u);
  EXPECT_DOUBLE_EQ(c.repetitions[0].seconds, 4.0);
  EXPECT_DOUBLE_EQ(c.repetitions[0].counters.at("rank_max_s"), 4.0);
  EXPECT_DOUBLE_EQ(c.repetitions[0].counters.at("rank_min_s"), 2.0);
  EXPECT_DOUBLE_EQ(c.repetitions[0].counters.at("tflops"), 2.0);  // the visible count
  EXPECT_DOUBLE_EQ(c.repetitions[0].counters.at("tflops_flash_convention"), 4.0);
  EXPECT_DOUBLE_EQ(c.repetitions[0].counters.at("peak_fraction"), 0.5);    // of the visible count
  EXPECT_DOUBLE_EQ(c.repetitions[0].counters.at("hidden_fraction"), 0.4);  // median of 0.2 and 0.6
  EXPECT_DOUBLE_EQ(c.repetitions[0].counters.at("hidden_fraction_rank_min"), 0.2);
  EXPECT_DOUBLE_EQ(c.repetitions[1].seconds, 3.0);
  EXPECT_DOUBLE_EQ(c.repetitions[1].counters.at("hidden_fraction_rank_max"), 1.0);
  EXPECT_EQ(c.labels.at("shape"), "B=1 S=1024 H=8/8 d=64 causal");
  // Not measured: no hidden share at all, rather than a made-up one.
  const BenchCase quiet = ring_case("ring/fwd/zigzag", o, "zigzag", full, PassFlops{8e12, 8e12}, 0.0, nullptr);
  EXPECT_EQ(quiet.repetitions[0].counters.count("hidden_fraction"), 0u);
  EXPECT_EQ(quiet.repetitions[0].counters.count("peak_fraction"), 0u);
}

TEST(RingCase, TheShapeNamesTheWindow) {
  RunOptions o;
  o.seq = 1024;
  o.window = 100;
  const BenchCase c = ring_case("ring/fwd/zigzag", o, "zigzag", two_ranks({1.0}, {1.0}), PassFlops{1, 1}, 0.0, nullptr);
  EXPECT_EQ(c.labels.at("shape"), "B=1 S=1024 H=8/8 d=64 causal window 100");
}

/// The visible pairs of `mask` counted one by one against the rule of kernels::MaskRule.
double count_pairs(const MaskShape& mask) {
  auto document = [&](std::int64_t position) {
    std::int64_t d = 0;
    for (std::size_t i = 1; i + 1 < mask.doc_bounds.size(); ++i)
      if (mask.doc_bounds[i] <= position) d = std::int64_t(i);
    return d;
  };
  double n = 0;
  for (std::int64_t q = 0; q < mask.seq; ++q)
    for (std::int64_t k = 0; k < mask.seq; ++k)
      n += (!mask.causal || k <= q) && (mask.window <= 0 || q - k < mask.window) && document(q) == document(k);
  return n;
}

TEST(VisibleScores, CountsExactlyThePairsTheMaskLetsThrough) {
  const std::int64_t S = 37;
  const std::vector<std::vector<std::int64_t>> documents = {
      {}, {0, S}, {0, 1, 12, 13, 13, 36, S}, {0, 18, S}};  // one, one given, edges and empty ones, two
  for (bool causal : {false, true})
    for (std::int64_t window : {0, 1, 2, 5, 12, 13, 36, 37, 40})
      for (const auto& bounds : documents) {
        const MaskShape mask{S, causal, window, bounds, {}};
        SCOPED_TRACE(testing::Message() << "causal " << causal << " window " << window << " documents "
                                        << bounds.size());
        EXPECT_EQ(visible_scores(mask), count_pairs(mask));
      }
}

TEST(VisibleScores, CausalIsHalfTheSquareAndTheDiagonal) {
  EXPECT_EQ(visible_scores(MaskShape{4096, true, 0, {}, {}}), 4096.0 * 4097.0 / 2);
  EXPECT_EQ(visible_scores(MaskShape{4096, false, 0, {}, {}}), 4096.0 * 4096.0);
  // The main job's example: S = 16384, causal, window 2048.
  EXPECT_EQ(visible_scores(MaskShape{16384, true, 2048, {}, {}}), 2048.0 * 2049.0 / 2 + (16384.0 - 2048.0) * 2048.0);
}

TEST(PassFlops, CountsTheVisibleScoresAndKeepsTheConventionBeside) {
  RunOptions o;  // B=1 H=8 d=64 causal
  o.seq = 1024;
  o.window = 128;
  const double visible = visible_scores(mask_shape(o));
  const PassFlops f = pass_flops(o, false), b = pass_flops(o, true);
  EXPECT_DOUBLE_EQ(f.visible, 4.0 * 8 * 64 * visible);
  EXPECT_DOUBLE_EQ(b.visible, 2.5 * f.visible);
  EXPECT_DOUBLE_EQ(f.flash_convention, 4.0 * 1024 * 1024 * 8 * 64 / 2);  // the window ignored
  EXPECT_LT(f.visible, f.flash_convention / 3);  // a window of an eighth: about a quarter of the causal square
  // Every batch entry counts, in both figures (one list of documents, or none, serves them all).
  RunOptions batched = o;
  batched.batch = 3;
  EXPECT_DOUBLE_EQ(pass_flops(batched, false).visible, 3 * f.visible);
  EXPECT_DOUBLE_EQ(pass_flops(batched, true).visible, 3 * b.visible);
  EXPECT_DOUBLE_EQ(pass_flops(batched, false).flash_convention, 3 * f.flash_convention);
}

TEST(RunOptions, TheDefaultSequenceFitsTheRanksAndSaysSo) {
  char prog[] = "rfa_run";
  char* none[] = {prog, nullptr};
  RunOptions o = parse_run_options(1, none);
  EXPECT_EQ(fit_default_seq(o, 2), "");  // 8192 splits over 2 ranks
  EXPECT_EQ(o.seq, 8192);
  const std::string note = fit_default_seq(o, 3);
  EXPECT_EQ(o.seq, 8190);  // zigzag: a multiple of 2P = 6
  EXPECT_NE(note.find("S=8190"), std::string::npos);
  char flag[] = "--seq", value[] = "8192";
  char* given[] = {prog, flag, value, nullptr};
  RunOptions explicit_seq = parse_run_options(3, given);
  EXPECT_EQ(fit_default_seq(explicit_seq, 3), "");  // what the user asked for is never changed
  EXPECT_EQ(explicit_seq.seq, 8192);
}

// The balanced layout splits into 8 chunks a rank: the default 8192 becomes 8184 = 341 x 24 at P = 3.
TEST(RunOptions, TheDefaultSequenceFitsTheBalancedLayoutsChunks) {
  char prog[] = "rfa_run", flag[] = "--layout", value[] = "balanced";
  char* argv[] = {prog, flag, value, nullptr};
  RunOptions o = parse_run_options(3, argv);
  const std::string note = fit_default_seq(o, 3);
  EXPECT_EQ(o.seq, 8184);
  EXPECT_NE(note.find("8P = 24"), std::string::npos) << note;
}

// A grid mask sets the length to its points: 8 x 4 x 2 of them in three dimensions.
TEST(RunOptions, AGridMaskOfThreeExtentsHasTheirProductOfTokens) {
  char prog[] = "rfa_run", flag[] = "--mask", value[] = "grid:8x4x2:1";
  char* argv[] = {prog, flag, value, nullptr};
  const RunOptions o = parse_run_options(3, argv);
  EXPECT_EQ(o.seq, 64);
  char plane[] = "grid:8x4:1";
  char* flat[] = {prog, flag, plane, nullptr};
  EXPECT_EQ(parse_run_options(3, flat).seq, 32);
  // Extents whose product leaves int64 are refused by name, not wrapped.
  char huge[] = "grid:4294967297x4294967297:0";
  char* too_many[] = {prog, flag, huge, nullptr};
  try {
    parse_run_options(3, too_many);
    ADD_FAILURE() << "accepted --mask " << huge;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("too many points"), std::string::npos) << e.what();
  }
}

TEST(RunOptions, BadFlagsAreNamed) {
  char prog[] = "rfa_run", bogus[] = "--bogus";
  char* argv[] = {prog, bogus, nullptr};
  try {
    parse_run_options(2, argv);
    FAIL() << "no error for an unknown flag";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--bogus"), std::string::npos);
  }
}

/// parse_run_options over `args` (after the program's name).
RunOptions parsed(std::vector<std::string> args) {
  args.insert(args.begin(), "rfa_run");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  return parse_run_options(int(args.size()), argv.data());
}

/// The message parse_run_options refuses `args` with ("" where it takes them).
std::string refusal(std::vector<std::string> args) {
  try {
    parsed(std::move(args));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Every flag takes the last value given: --strategy auto too, and the mask flags (--causal and
// --no-causal after a --mask spec leave no spec behind).
TEST(RunOptions, TheLastValueGivenWins) {
  const RunOptions ring = parsed({"--strategy", "auto", "--strategy", "ring"});
  EXPECT_FALSE(ring.auto_strategy);
  EXPECT_EQ(ring.strategy.kind, engine::StrategyKind::ring);
  EXPECT_TRUE(parsed({"--strategy", "ring", "--strategy", "auto"}).auto_strategy);
  for (const char* mask : {"--causal", "--no-causal"}) {
    const RunOptions o = parsed({"--mask", "prefix-lm:100", mask});
    EXPECT_TRUE(o.mask_spec.empty()) << mask;
    EXPECT_EQ(o.mask, std::string(mask) == "--causal" ? RFA_MASK_CAUSAL : RFA_MASK_NONE);
  }
}

// --scale is a positive fp32 number read whole; --json names a file.
TEST(RunOptions, ScaleAndJsonAreReadWhole) {
  EXPECT_FLOAT_EQ(parsed({"--scale", "0.25"}).scale, 0.25f);
  for (const char* bad : {" 0.25", "0.25x", "0", "-1", "1e-40", "1e39", "inf", "nan", ""})
    EXPECT_NE(refusal({"--scale", bad}).find("--scale"), std::string::npos) << "--scale '" << bad << "'";
  EXPECT_NE(refusal({"--json", ""}).find("--json expects a file name"), std::string::npos);
  EXPECT_EQ(parsed({"--json", "out.json"}).json, "out.json");
}

TEST(DocumentSpec, ListsForEveryEntryOrOnePerEntry) {
  const DocumentLists shared = parse_documents("10,0,5", 40, 3);
  EXPECT_EQ(shared.bounds, (std::vector<std::int64_t>{0, 10, 10, 15, 40}));  // the last holds the rest
  EXPECT_TRUE(shared.offsets.empty());
  EXPECT_EQ(shared.entry(2), shared.bounds);
  const DocumentLists none = parse_documents("", 40, 2);
  EXPECT_TRUE(none.bounds.empty() && none.offsets.empty());
  const DocumentLists each = parse_documents("40/random:4/", 40, 3);
  EXPECT_EQ(each.offsets.size(), 4u);
  EXPECT_EQ(each.entry(0), (std::vector<std::int64_t>{0, 40, 40}));
  const std::vector<std::int64_t> random = each.entry(1);
  ASSERT_EQ(random.size(), 5u);  // four documents
  EXPECT_TRUE(random.front() == 0 && random.back() == 40 && std::is_sorted(random.begin(), random.end()));
  EXPECT_EQ(random, parse_documents("/random:4/", 40, 3).entry(1));          // the same cuts every time
  EXPECT_NE(random, parse_documents("random:4/random:4/", 40, 3).entry(0));  // seeded by the entry
  EXPECT_TRUE(each.entry(2).empty());
  for (const char* bad : {"30,11", "a", "5,", "random:0", "1/2", "10,9223372036854775807"}) {
    try {
      parse_documents(bad, 40, 3);
      ADD_FAILURE() << "accepted --documents " << bad;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("--documents"), std::string::npos) << e.what();
    }
  }
  // Lengths whose sum leaves int64 are too long for the sequence, not a wrapped boundary.
  try {
    parse_documents("10,9223372036854775807", 40, 3);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("add up to more than the sequence's 40 tokens"), std::string::npos)
        << e.what();
  }
}

TEST(PassFlops, PerSequenceDocumentsCountEachEntryOnItsOwn) {
  RunOptions o;
  o.seq = 100;
  o.batch = 2;
  o.mask = RFA_MASK_NONE;
  o.documents = parse_documents("50/", 100, 2);  // entry 0: two documents of 50; entry 1: one of 100
  EXPECT_EQ(visible_scores(mask_shape(o, 0)), 2 * 50.0 * 50.0);
  EXPECT_EQ(visible_scores(mask_shape(o, 1)), 100.0 * 100.0);
  EXPECT_DOUBLE_EQ(pass_flops(o, false).visible, 4.0 * 8 * 64 * (5000.0 + 10000.0));
}

TEST(ResultJson, GoogleBenchmarkLayoutWithContextRepetitionsAndMedian) {
  BenchCase c;
  c.name = "ring/fwd/\"odd\"";
  c.labels = {{"suite", "ring"}};
  c.counters = {{"bytes_moved", 64.0}};
  for (double s : {0.003, 0.001, 0.002}) {
    Repetition r;
    r.seconds = s;
    r.counters["tflops"] = 1.0 / s;
    r.counters["hidden_fraction"] = s > 0.0025 ? NAN : 0.5;
    c.repetitions.push_back(r);
  }
  const std::string path = ::testing::TempDir() + "rfa_result_json_test.json";
  write_results_json(path, {{"git_commit", "abc"}, {"ranks", "2"}}, {c});
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  const std::string json = text.str();
  std::remove(path.c_str());
  EXPECT_NE(json.find("\"context\": {\n    \"git_commit\": \"abc\",\n    \"ranks\": \"2\""), std::string::npos);
  EXPECT_NE(json.find("\"name\": \"ring/fwd/\\\"odd\\\"\""), std::string::npos);  // quotes escaped
  EXPECT_NE(json.find("\"run_type\": \"iteration\""), std::string::npos);
  EXPECT_NE(json.find("\"hidden_fraction\": null"), std::string::npos);  // NaN is not JSON
  EXPECT_NE(json.find("\"aggregate_name\": \"median\""), std::string::npos);
  EXPECT_NE(json.find("\"real_time\": 2,"), std::string::npos);  // the median repetition, in ms
  EXPECT_NE(json.find("\"bytes_moved\": 64"), std::string::npos);
  EXPECT_THROW(write_results_json("/nonexistent-folder/x.json", {}, {c}), ResultsFileError);
}

}  // namespace
}  // namespace rfa::perf
