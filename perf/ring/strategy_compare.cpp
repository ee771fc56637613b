// SPDX-License-Identifier: BSD-3-Clause
#include "strategy_compare.hpp"

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cstdio>
#include <sstream>

#include "core/error.hpp"
#include "cpu_peak.hpp"
#include "layout/sequence_layout.hpp"
#include "option_errors.hpp"
#include "ring_measure.hpp"
#include "ring_problem.hpp"

namespace rfa {
namespace perf {
namespace {

/// A strategy's forward and backward samples, or why it did not run.
struct StrategyRun {
  std::string label;    ///< "ring", "hybrid:2", ...
  std::string skipped;  ///< the reason, when the problem does not fit the strategy
  PassSamples fwd, bwd;
};

template <class T>
StrategyRun measure(comm::Communicator& comm, const RunOptions& o, const engine::StrategyChoice& choice) {
  StrategyRun run;
  run.label = strategy_label(choice);
  std::unique_ptr<engine::AttentionStrategy> attn;
  try {
    attn = engine::make_strategy(comm, attention_config(o), choice);  // fails on every rank together
  } catch (const Error& e) {
    run.skipped = e.what();
    return run;
  }
  LocalProblem<T> lp(*attn);
  // Untimed: first-touch and first-rendezvous costs out of the figures, and a real lse for the
  // timed backward.
  for (int w = 0; w < std::max(o.warmup, 1); ++w) {
    lp.forward(*attn);
    lp.backward(*attn);
  }
  for (int r = 0; r < o.repeat; ++r) {
    // --release-workspace: each timed pass allocates its workspace afresh.
    time_pass(
        comm, *attn,
        [&] {
          if (o.release_workspace) attn->release_workspace();
          lp.forward(*attn);
        },
        run.fwd);
    time_pass(
        comm, *attn,
        [&] {
          if (o.release_workspace) attn->release_workspace();
          lp.backward(*attn);
        },
        run.bwd);
  }
  return run;
}

/// A strategy's row: times, rates over the visible scores with their fraction of the job's
/// measured `peak`, bytes sent and workspace.
void print_row(const StrategyRun& run, const PassFlops& ffwd, const PassFlops& fbwd, double peak) {
  if (!run.skipped.empty()) {
    std::printf("%-12s skipped: %s\n", run.label.c_str(), run.skipped.c_str());
    return;
  }
  const double MiB = 1024.0 * 1024.0;
  const Spread f = spread_of(run.fwd.slowest()), b = spread_of(run.bwd.slowest());
  std::printf("%-12s %9.1f %9.1f %13s %13s %10.2f %10.2f %10.2f %10.2f\n", run.label.c_str(), 1e3 * f.median,
              1e3 * b.median, rate_text(ffwd.visible, f.median, peak).c_str(),
              rate_text(fbwd.visible, b.median, peak).c_str(), double(run.fwd.bytes_sent_max) / MiB,
              double(run.bwd.bytes_sent_max) / MiB, double(run.fwd.workspace_max) / MiB,
              double(run.bwd.workspace_max) / MiB);
  std::fflush(stdout);
}

}  // namespace

std::vector<engine::StrategyChoice> parse_strategies(const std::string& text, int ranks) {
  using engine::StrategyKind;
  std::vector<engine::StrategyChoice> choices;
  if (text == "all") {
    choices = {{StrategyKind::ring, 0, 1}, {StrategyKind::ulysses, 0, 1}, {StrategyKind::allgather, 0, 1}};
    if (ranks > 2 && ranks % 2 == 0) choices.push_back({StrategyKind::hybrid, 2, 1});
    return choices;
  }
  std::stringstream list(text);
  std::string item;
  while (std::getline(list, item, ',')) {
    engine::StrategyChoice c;
    if (item == "ring") {
      c.kind = StrategyKind::ring;
    } else if (item == "ulysses") {
      c.kind = StrategyKind::ulysses;
    } else if (item == "allgather") {
      c.kind = StrategyKind::allgather;
    } else if (item.rfind("hybrid:", 0) == 0) {
      c.kind = StrategyKind::hybrid;
      c.ulysses_degree = refused_as_rfa_error([&] { return whole_int("--strategy hybrid:PU", item.substr(7), 1); });
    } else {
      fail(RFA_ERROR_INVALID_ARGUMENT, "--strategy: '", item,
           "' is not one of ring, ulysses, allgather, hybrid:PU (e.g. hybrid:2), or all");
    }
    choices.push_back(c);
  }
  require(!choices.empty(), "--strategy needs at least one strategy");
  return choices;
}

void compare_strategies(comm::Communicator& comm, const RunOptions& o,
                        const std::vector<engine::StrategyChoice>& choices) {
  const int P = comm.size();
  const int threads = Kokkos::DefaultHostExecutionSpace().concurrency();
  if (comm.rank() == 0) {
    std::printf("rfa_ring_bench --strategy: %s %s %s, P=%d, %d host thread(s)/rank, %d repetition(s)\n",
                shape_label(o).c_str(), dtype_name(o.dtype), layout::layout_name(o.layout), P, threads, o.repeat);
  }
  std::vector<BenchCase> cases;
  const double peak = comm.rank() == 0 ? host_job_peak(o, P, threads) : 0.0;
  if (comm.rank() == 0) {
    std::printf(
        "medians over repetitions of the slowest rank; GFLOP/s over the scores the mask leaves visible, with "
        "their fraction of the job's measured peak (%.1f GFLOP/s over %d rank(s) x %d thread(s)); bytes sent and "
        "engine workspace: the most of any rank\n",
        peak * 1e-9, P, threads);
    std::printf("%-12s %9s %9s %13s %13s %10s %10s %10s %10s\n", "strategy", "fwd ms", "bwd ms", "fwd GF/s", "bwd GF/s",
                "fwd MiB tx", "bwd MiB tx", "fwd MiB ws", "bwd MiB ws");
    std::fflush(stdout);
  }
  const PassFlops ffwd = pass_flops(o, false), fbwd = pass_flops(o, true);
  const char* layout = layout::layout_name(o.layout);
  for (const engine::StrategyChoice& choice : choices) {
    const StrategyRun run = dispatch_dtype(o.dtype, [&](auto tag) { return measure<decltype(tag)>(comm, o, choice); });
    if (comm.rank() != 0) continue;
    print_row(run, ffwd, fbwd, peak);
    if (!run.skipped.empty()) continue;
    cases.push_back(
        ring_case("strategy/fwd/" + run.label + "/" + layout, o, layout, run.fwd, ffwd, peak, nullptr, run.label));
    cases.push_back(
        ring_case("strategy/bwd/" + run.label + "/" + layout, o, layout, run.bwd, fbwd, peak, nullptr, run.label));
  }
  if (comm.rank() == 0 && !o.json.empty()) {
    // The context's strategy names the comparison; each case names its own.
    ContextFields context = ring_context("rfa_ring_bench", P, "identity", o, threads, "compare");
    write_results_json(o.json, context, cases);
    std::printf("results written to %s\n", o.json.c_str());
  }
}

}  // namespace perf
}  // namespace rfa
