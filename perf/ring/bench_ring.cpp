// SPDX-License-Identifier: BSD-3-Clause
// rfa_ring_bench: ring efficiency and hidden communication, per layout.
//
//   efficiency = (single-rank time on the full sequence) / (P x ring time)
//   hidden     = 1 - (ring time - same schedule without communication) / communication alone
//   transfers' cost to the kernels = (the ranks' kernel time with the transfers - without) /
//                                    bytes moved
// Every repetition is timed on every rank: figures are medians with their range, and the
// hidden share is given only where communication alone stands out of the ring time's noise.
//
// Defaults are the figures of record: S=16384, H=4, d=128, fp32, causal, every layout; run it
// with one rank per core (mpirun -np 2 --bind-to core). --json FILE writes perf/'s result format.
#include <mpi.h>

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "comm/mpi/mpi_communicator.hpp"
#include "core/error.hpp"
#include "cpu_peak.hpp"
#include "engine/attention_config.hpp"
#include "engine/ring_attention.hpp"
#include "layout/sequence_layout.hpp"
#include "mpi_program.hpp"
#include "ring_measure.hpp"
#include "ring_problem.hpp"
#include "run_options.hpp"
#include "strategy_compare.hpp"

namespace rfa {
namespace perf {
namespace {

using engine::RingMode;

const char* kBenchUsage = R"( [options]

Ring efficiency (single-rank time on the full sequence / (P x ring time)) and the share of
communication hidden under compute, per layout, on an embedded problem, and what the ring's
transfers cost the kernels they overlap (ns of kernel time per byte moved, on zigzag). Run it
with one rank per core (mpirun -np 2 --bind-to core).

  --batch N          batch size (default 1)
  --seq N            total sequence length over all ranks (default 16384)
  --heads N          query heads (default 4)
  --kv-heads N       key/value heads, dividing --heads (default: = --heads)
  --head-dim N       head dimension, a multiple of 8 up to 256 (default 128)
  --layout L         contiguous | zigzag | stripe | balanced (default: the first three)
  --dtype T          fp32 | bf16 | fp16 (default fp32)
  --mask M           causal | none (default causal); --causal and --no-causal also work; or
                     any mask rfa_run takes (rfa_run --help)
  --window W, --documents SPEC, --softcap C, --value-head-dim N
                     as rfa_run's, on every layout (--sinks is refused: rfa_run --sinks times
                     attention sinks)
  --warmup N         untimed passes before each schedule (default 1)
  --repeat N         timed repetitions of each schedule (default 3; the comparator needs 10)
  --no-overlap       skip the runs without communication and without compute
  --json FILE        also write the results as JSON (rank 0), perf/'s result format
  --strategy LIST    compare strategies instead of layouts, on --layout (default zigzag): all,
                     or a comma list of ring, ulysses, allgather, hybrid:PU; prints time, bytes
                     sent and engine workspace per rank (and --json writes them)
  --kokkos-help      Kokkos' own options
  --help             this text
)";

/// Passes of each schedule at least that the transfers' cost is taken from (its difference is a
/// few percent of a pass).
constexpr int kTransferCostRepeat = 10;

/// Samples of the forward and backward passes of one schedule.
struct Schedule {
  PassSamples fwd, bwd;
};

/// The schedules of `modes` on one engine, taking turns pass by pass (each repetition's
/// forwards, then its backwards), so that the machine's drift moves them alike.
template <class T>
std::vector<Schedule> measure(comm::Communicator& ring, const engine::AttentionConfig& cfg,
                              const std::vector<RingMode>& modes, int warmup, int repeat) {
  engine::RingAttention attn(ring, cfg);
  LocalProblem<T> lp(attn);
  // Untimed passes first: real results (the timed backward sees a real lse), and the first-call
  // costs (page faults of fresh buffers, MPI's first rendezvous) out of the figures.
  for (int w = 0; w < warmup; ++w) {
    lp.forward(attn);
    lp.backward(attn);
  }
  std::vector<Schedule> s(modes.size());
  for (int r = 0; r < repeat; ++r)
    for (bool backward : {false, true})
      for (std::size_t i = 0; i < modes.size(); ++i)
        time_pass(ring, attn, lp, modes[i], backward, backward ? s[i].bwd : s[i].fwd);
  return s;
}

/// One schedule, the options' warm-up and repetitions.
template <class T>
Schedule measure(comm::Communicator& ring, const engine::AttentionConfig& cfg, RingMode mode, const RunOptions& o) {
  return measure<T>(ring, cfg, {mode}, o.warmup, o.repeat).front();
}

/// What the ring's transfers cost the kernels they overlap, in seconds of kernel time per byte
/// the ring moved: forward, backward and both passes together.
struct TransferCost {
  double forward = 0, backward = 0, both = 0;
};

/// Measures TransferCost: each rank's kernel time with the transfers less without
/// (RingMode::compute_only), the two schedules taking turns pass by pass, the median difference
/// summed over the ranks, over the bytes the ring moved. A host TCP stack processes the bytes on the cores that
/// compute, and its work, the polls and the cache it takes slow the kernels by more than the stack's own CPU time over
/// an idle transfer: this is the performance model's Link::cpu_seconds_per_byte as it acts,
/// where every rank has a core of its own (on shared cores each rank's kernels also wait while
/// the others' are slowed, which the difference counts again).
template <class T>
TransferCost transfer_cost(comm::Communicator& ring, const engine::AttentionConfig& cfg, const RunOptions& o,
                           int repeat) {
  const std::vector<Schedule> s =
      measure<T>(ring, cfg, {RingMode::full, RingMode::compute_only}, std::max(1, o.warmup), repeat);
  const Schedule &with = s[0], &without = s[1];
  // The kernel seconds the transfers added, over every rank.
  auto slowed = [](const PassSamples& a, const PassSamples& b) {
    double sum = 0;
    for (std::size_t k = 0; k < a.compute.front().size(); ++k) {
      std::vector<double> d;
      for (std::size_t r = 0; r < a.compute.size(); ++r) d.push_back(a.compute[r][k] - b.compute[r][k]);
      sum += spread_of(d).median;
    }
    return sum;
  };
  const double f = slowed(with.fwd, without.fwd), b = slowed(with.bwd, without.bwd);
  const double fb = double(with.fwd.bytes_moved), bb = double(with.bwd.bytes_moved);
  TransferCost c;
  c.forward = fb > 0 ? f / fb : 0.0;
  c.backward = bb > 0 ? b / bb : 0.0;
  c.both = fb + bb > 0 ? (f + b) / (fb + bb) : 0.0;
  return c;
}

/// "95% (80-100)", or why there is no figure.
std::string hidden_text(const Schedule& full, const Schedule& compute_only, const Schedule& comm_only, bool backward,
                        bool measured) {
  if (!measured) return "-";
  const PassSamples& f = backward ? full.bwd : full.fwd;
  const PassSamples& c = backward ? comm_only.bwd : comm_only.fwd;
  if (!overlap_measurable(f, c)) return "noise";
  const Spread h = spread_of(hidden_samples(f, backward ? compute_only.bwd : compute_only.fwd, c));
  char text[48];
  std::snprintf(text, sizeof text, "%.0f%% (%.0f-%.0f)", 100 * h.median, 100 * h.min, 100 * h.max);
  return text;
}

/// Adds the efficiency of each repetition to a ring case.
void add_efficiency(BenchCase& c, double single_seconds, int P) {
  for (Repetition& r : c.repetitions) r.counters["efficiency"] = single_seconds / (P * r.seconds);
}

template <class T>
void bench(comm::Communicator& ring, const RunOptions& o, const std::vector<rfa_layout_t>& layouts) {
  engine::AttentionConfig cfg = attention_config(o);
  const int P = ring.size(), me = ring.rank();
  const int threads = Kokkos::DefaultHostExecutionSpace().concurrency();
  const bool overlap = o.overlap && P > 1;
  const PassFlops ffwd = pass_flops(o, false), fbwd = pass_flops(o, true);

  // The single-rank baseline: rank 0 alone on the full sequence while the others wait.
  Schedule single;
  double peak = 0;
  if (me == 0) {
    std::printf(
        "rfa_ring_bench: %s %s, P=%d, %d host thread(s)/rank, %d repetition(s)\nsingle rank, full sequence "
        "...\n",
        shape_label(o).c_str(), dtype_name(o.dtype), P, threads, o.repeat);
    std::fflush(stdout);
    auto alone = comm::make_mpi_communicator(MPI_COMM_SELF, 0);
    cfg.layout = RFA_LAYOUT_CONTIGUOUS;
    single = measure<T>(*alone, cfg, RingMode::full, o);
    peak = host_job_peak(o, P, threads);
  }
  ring.barrier();
  const double single_fwd = spread_of(single.fwd.slowest()).median, single_bwd = spread_of(single.bwd.slowest()).median;
  if (me == 0) {
    // GFLOP/s over the scores the mask leaves visible; the single rank's fraction is of one
    // rank's share of the job's peak, the ring's of the whole job's.
    const double rank_peak = peak / P;
    std::printf(
        "measured peak: %.1f GFLOP/s a core, %.1f for the job (%d rank(s) x %d thread(s))\nsingle rank, full "
        "sequence: forward %.1f ms at %.1f GFLOP/s (%.0f%% of a rank's peak), backward %.1f ms at %.1f GFLOP/s "
        "(%.0f%%)\n",
        peak / (P * threads) * 1e-9, peak * 1e-9, P, threads, 1e3 * single_fwd, ffwd.visible / single_fwd * 1e-9,
        100 * ffwd.visible / single_fwd / rank_peak, 1e3 * single_bwd, fbwd.visible / single_bwd * 1e-9,
        100 * fbwd.visible / single_bwd / rank_peak);
    std::printf("%-11s %9s %9s %13s %13s %8s %8s %14s %14s %9s\n", "layout", "fwd ms", "bwd ms", "fwd GF/s", "bwd GF/s",
                "fwd eff", "bwd eff", "fwd hidden", "bwd hidden", "comm ms");
    std::fflush(stdout);
  }
  std::vector<BenchCase> cases;
  for (rfa_layout_t layout : layouts) {
    cfg.layout = layout;
    const Schedule full = measure<T>(ring, cfg, RingMode::full, o);
    Schedule compute_only, comm_only;
    if (overlap) {
      compute_only = measure<T>(ring, cfg, RingMode::compute_only, o);
      comm_only = measure<T>(ring, cfg, RingMode::comm_only, o);
    }
    if (me != 0) continue;
    const char* name = layout::layout_name(layout);
    const double f = spread_of(full.fwd.slowest()).median, b = spread_of(full.bwd.slowest()).median;
    const double comm_f = overlap ? spread_of(comm_only.fwd.slowest()).median : 0;
    const double comm_b = overlap ? spread_of(comm_only.bwd.slowest()).median : 0;
    std::printf("%-11s %9.1f %9.1f %13s %13s %7.1f%% %7.1f%% %14s %14s %4.0f/%-4.0f\n", name, 1e3 * f, 1e3 * b,
                rate_text(ffwd.visible, f, peak).c_str(), rate_text(fbwd.visible, b, peak).c_str(),
                100 * single_fwd / (P * f), 100 * single_bwd / (P * b),
                hidden_text(full, compute_only, comm_only, false, overlap).c_str(),
                hidden_text(full, compute_only, comm_only, true, overlap).c_str(), 1e3 * comm_f, 1e3 * comm_b);
    std::fflush(stdout);
    const auto hf = overlap ? hidden_samples(full.fwd, compute_only.fwd, comm_only.fwd) : std::vector<double>{};
    const auto hb = overlap ? hidden_samples(full.bwd, compute_only.bwd, comm_only.bwd) : std::vector<double>{};
    const bool hf_ok = overlap && overlap_measurable(full.fwd, comm_only.fwd);
    const bool hb_ok = overlap && overlap_measurable(full.bwd, comm_only.bwd);
    cases.push_back(ring_case(std::string("ring/fwd/") + name, o, name, full.fwd, ffwd, peak, hf_ok ? &hf : nullptr));
    add_efficiency(cases.back(), single_fwd, P);
    if (overlap) cases.back().counters["comm_only_s"] = comm_f;
    cases.push_back(ring_case(std::string("ring/bwd/") + name, o, name, full.bwd, fbwd, peak, hb_ok ? &hb : nullptr));
    add_efficiency(cases.back(), single_bwd, P);
    if (overlap) cases.back().counters["comm_only_s"] = comm_b;
  }
  // On the zigzag layout (the first given where it is not among them), every rank busy at
  // every step.
  TransferCost cost;
  if (overlap) {
    cfg.layout = std::find(layouts.begin(), layouts.end(), RFA_LAYOUT_ZIGZAG) != layouts.end() ? RFA_LAYOUT_ZIGZAG
                                                                                               : layouts.front();
    cost = transfer_cost<T>(ring, cfg, o, std::max(o.repeat, kTransferCostRepeat));
    if (me == 0)
      std::printf(
          "the transfers' cost to the kernels (%s; each rank's kernel time with the ring's transfers less without, "
          "over the bytes moved): %.2f / %.2f ns per byte (forward / backward), %.2f both\n",
          layout::layout_name(cfg.layout), 1e9 * cost.forward, 1e9 * cost.backward, 1e9 * cost.both);
  }
  if (me == 0 && !o.json.empty()) {
    ContextFields context = ring_context("rfa_ring_bench", P, "identity", o, threads);
    if (overlap) set_field(context, "transfer_cost_ns_per_byte", std::to_string(1e9 * cost.both));
    set_field(context, "single_rank_fwd_s", std::to_string(single_fwd));
    set_field(context, "single_rank_bwd_s", std::to_string(single_bwd));
    write_results_json(o.json, context, cases);
    std::printf("results written to %s\n", o.json.c_str());
  }
}

}  // namespace
}  // namespace perf
}  // namespace rfa

int main(int argc, char** argv) {
  return rfa::perf::run_mpi_program(argc, argv, "rfa_ring_bench", [](int world_rank, int args, char** argv_) {
    // The figures of record are the defaults; the user's flags come after and win.
    std::vector<char*> all = {argv_[0]};
    const char* defaults[] = {"--seq", "16384", "--heads", "4", "--head-dim", "128", "--dtype", "fp32", "--causal"};
    for (const char* d : defaults) all.push_back(const_cast<char*>(d));
    bool layout_given = false;
    std::string strategies;  // --strategy LIST: compare strategies instead of layouts
    for (int i = 1; i < args; ++i) {
      if (std::string(argv_[i]) == "--strategy" && i + 1 < args) {
        strategies = argv_[++i];
        continue;
      }
      if (std::string(argv_[i]) == "--layout") layout_given = true;
      all.push_back(argv_[i]);
    }
    int P = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    rfa::perf::RunOptions opts;
    std::vector<rfa_layout_t> layouts = {RFA_LAYOUT_CONTIGUOUS, RFA_LAYOUT_ZIGZAG, RFA_LAYOUT_STRIPE};
    try {
      opts = rfa::perf::parse_run_options(int(all.size()), all.data());
      if (opts.help) {
        if (world_rank == 0) std::printf("usage: mpirun -np P %s%s", argv_[0], rfa::perf::kBenchUsage);
        return 0;
      }
      rfa::require(opts.check == rfa::perf::CheckMode::automatic,
                   "rfa_ring_bench does not check results (rfa_run does): drop --check/--sampled-check/--no-check");
      rfa::require(!opts.sinks,
                   "rfa_ring_bench does not apply attention sinks (rfa_run --sinks times them): drop --sinks");
      if (layout_given) layouts = {opts.layout};
      // Same argv, same verdict on every rank, before any communication: rank 0 speaks.
      for (rfa_layout_t layout : layouts) {
        rfa::engine::AttentionConfig cfg = rfa::perf::attention_config(opts);
        cfg.layout = layout;
        rfa::engine::validate_local(cfg, P);
      }
    } catch (const rfa::Error& e) {
      if (world_rank == 0) std::fprintf(stderr, "rfa_ring_bench: error: %s\n", e.what());
      return 2;
    }
    auto ring = rfa::comm::make_mpi_communicator(MPI_COMM_WORLD, world_rank);
    if (!strategies.empty()) {
      std::vector<rfa::engine::StrategyChoice> choices;
      try {
        choices = rfa::perf::parse_strategies(strategies, P);
      } catch (const rfa::Error& e) {
        if (world_rank == 0) std::fprintf(stderr, "rfa_ring_bench: error: %s\n", e.what());
        return 2;
      }
      rfa::perf::compare_strategies(*ring, opts, choices);
      return 0;
    }
    rfa::dispatch_dtype(opts.dtype, [&](auto tag) {
      rfa::perf::bench<decltype(tag)>(*ring, opts, layouts);
      return 0;
    });
    return 0;
  });
}
