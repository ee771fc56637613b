// SPDX-License-Identifier: BSD-3-Clause
// rfa_model_check: the performance model (model/performance_model.hpp) against measurement, on
// the ranks it runs on. It calibrates the model's machine from measurements taken on the same
// ranks (a rank's whole-tile kernel rate and a call's cost per row, over interleaved heads and
// over one packed K/V head, what a tile the mask cuts costs per score and per visible score,
// and the ring exchange's latency and bandwidth: kernel_calibration.hpp) and runs every
// strategy (the ring on each layout, Ulysses, the KV all-gather and the hybrid grids that fit)
// on causal, windowed and unmasked problems, in rounds that take every case once and the
// kernels' calibration blocks in between, then prints the predicted and the measured time of
// each pass (the slowest rank's median), and their ratio. fp32 (the portable kernels, whose
// tiles the model counts).
//
//   mpiexec -n P rfa_model_check [--seq N] [--heads N] [--head-dim N] [--repeat N] [--json FILE]
//                                [--links GBPS,US[,NS[,BYTES]]]
// --links gives the links' bandwidth and latency (and the CPU nanoseconds a byte's transfer costs
// the cores at its ends, a host TCP stack's, and the bytes a shaped link passes at once after a
// pause, its token bucket's burst) instead of measuring them: every ring hop of the
// run crosses such a link (scripts/multinode's nodes of one rank, their links shaped and
// calibrated by the harness: docs/performance-model.md, "Across nodes").
#include <mpi.h>

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "collective/deadline.hpp"
#include "collective/mpi_error.hpp"
#include "collective/node_cpus.hpp"
#include "collective/wait_spin.hpp"
#include "comm/mpi/mpi_communicator.hpp"
#include "core/error.hpp"
#include "engine/attention_strategy.hpp"
#include "engine/pass_timings.hpp"
#include "kernel_calibration.hpp"
#include "layout/sequence_layout.hpp"
#include "model/performance_model.hpp"
#include "mpi_program.hpp"
#include "result_json.hpp"
#include "ring_measure.hpp"
#include "ring_problem.hpp"
#include "run_options.hpp"

namespace rfa {
namespace perf {
namespace {

using engine::StrategyChoice;
using engine::StrategyKind;

/// The slowest rank's `value` (collective).
double slowest(comm::Communicator& world, double value) {
  for (double x : gather_everywhere(world, value)) value = std::max(value, x);
  return value;
}

/// Collective: the slowest rank's median over `repeat` runs of `pass` (each after a barrier).
template <class Pass>
double slowest_median(comm::Communicator& world, int repeat, Pass&& pass) {
  std::vector<double> mine;
  for (int r = 0; r < repeat; ++r) {
    world.barrier();
    const auto start = std::chrono::steady_clock::now();
    pass();
    mine.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return slowest(world, median(mine));
}

/// Where a node has fewer cores than ranks, the ranks calibrate in turns: `count` groups of
/// at most as many ranks as cores, this rank in group `mine`, so that every measured rank has a
/// core of its own while the node's cores are all busy, as the model's rates are defined
/// (measured together, ranks that share a core take turns in slices of the scheduler's length,
/// which on blocks of a few milliseconds swung a masked tile's fitted cost by a quarter).
struct Turns {
  int count = 1;
  int mine = 0;
};

/// A barrier on comm whose waiting ranks poll MPI without pause for `spin`, then nap `nap`
/// between polls (collective::wait_within); `what` names it in a timeout's message.
void polling_barrier(MPI_Comm comm, std::chrono::milliseconds spin, std::chrono::microseconds nap,
                     const std::string& what) {
  MPI_Request request;
  collective::check_mpi(MPI_Ibarrier(comm, &request), "MPI_Ibarrier");
  // No deadline (RFA_TIMEOUT_S=0) would wait in MPI_Waitall, which polls without a pause.
  const double timeout = collective::current_timeout() > 0.0 ? collective::current_timeout() : 1e9;
  collective::check_mpi(collective::wait_within(
                            &request, 1, MPI_STATUS_IGNORE, timeout,
                            [&](const int*) {
                              return "rfa_model_check: a rank did not reach " + what + " within " +
                                     collective::seconds_text(timeout);
                            },
                            spin, nap),
                        ("MPI_Wait (" + what + ")").c_str());
}

/// A barrier whose waiting ranks nap between polls from the start and leave the cores to the
/// measured ones. Their naps are long (5 ms, where the engines' waits nap 0.2 ms): over TCP each
/// poll is a system call on every socket, and six ranks polling every 0.2 ms while two measured
/// (eight "nodes" on two cores) cost the measured ranks 8-37% of their rate (perf/RESULTS.md,
/// "2026-12-02 (second session) — how long a waiting rank polls"). Each barrier then ends up to
/// a nap late: a few seconds over the whole calibration.
void napping_barrier(MPI_Comm comm) {
  polling_barrier(comm, std::chrono::milliseconds(0), std::chrono::milliseconds(5), "the calibration's barrier");
}

/// One rank's kernels on blocks of its own (each rank on MPI_COMM_SELF, the groups of `turns`
/// one after another), timed a round at a time: round() times each block's calls in a row once,
/// forward and backward, and seconds() pairs them (paired_seconds). The blocks take turns within
/// a round, and the rounds take turns with the checked cases' (run()), so that the machine's
/// drift (5-20% within minutes on the development VMs) moves the calibration and what it
/// predicts alike, and what the model takes from the blocks' ratios (a call's cost per row, a
/// masked tile's cost, the packed-head speedup) holds still.
class KernelTimer {
 public:
  /// `cpu_threads` above 0: a call's time is the CPU time of the process over that many threads
  /// (CalibrationPlan::cpu_threads); 0: its wall time.
  /// Collective.
  KernelTimer(const std::vector<CalibrationBlock>& blocks, const Turns& turns, int cpu_threads)
      : blocks_(blocks),
        turns_(turns),
        cpu_threads_(cpu_threads),
        wait_spin_(collective::wait_spin_for(MPI_COMM_WORLD)),
        self_(comm::make_mpi_communicator(MPI_COMM_SELF, 0)),
        forward_(blocks.size()),
        backward_(blocks.size()) {
    for (const CalibrationBlock& block : blocks_) {
      attn_.push_back(std::make_unique<engine::RingAttention>(*self_, block.config));
      problems_.push_back(std::make_unique<LocalProblem<float>>(*attn_.back()));
      problems_.back()->forward(*attn_.back());
      problems_.back()->backward(*attn_.back());
    }
  }

  /// Collective: every block's calls once, forward then backward, in turns; where the ranks
  /// share cores, then a turn of the waiting probe (waiting_share).
  void round() {
    for (bool backward : {false, true})
      for (std::size_t i = 0; i < blocks_.size(); ++i) {
        double t = 0;
        for (int g = 0; g < turns_.count; ++g) {
          napping_barrier(MPI_COMM_WORLD);
          if (g != turns_.mine) continue;
          for (int c = 0; c < blocks_[i].calls; ++c) {
            backward ? problems_[i]->backward(*attn_[i]) : problems_[i]->forward(*attn_[i]);
            const engine::PassTimings& timings = attn_[i]->last_timings();
            t += cpu_threads_ > 0 ? timings.compute_cpu / double(cpu_threads_) : timings.compute;
          }
        }
        (backward ? backward_ : forward_)[i].push_back(t);
      }
    napping_barrier(MPI_COMM_WORLD);
    if (cpu_threads_ > 0) probe_waiting();
  }

  /// Collective, where the ranks share cores (cpu_threads above 0): the share of its unit (its
  /// threads' cores) a rank takes while it waits in rfa's waits (MachineModel::waiting_rank_share),
  /// from the probe's turns in every round: each rank's median, the mean over the ranks; 0 where
  /// the ranks have cores of their own (not measured).
  double waiting_share(comm::Communicator& world) const {
    if (cpu_threads_ <= 0) return 0.0;
    const std::vector<double> each = gather_everywhere(world, waiting_.empty() ? 0.0 : median(waiting_));
    return std::accumulate(each.begin(), each.end(), 0.0) / double(each.size());
  }

  /// Collective: each block's seconds, forward and backward, from every rank's rounds
  /// (paired_seconds: the first block's time, the others' ratios to it within each round and
  /// rank). The first block's time is the median of every rank's turns where the ranks take
  /// turns on shared cores, its slowest rank's median where each has cores of its own.
  std::vector<std::pair<double, double>> seconds(comm::Communicator& world) const {
    const WholeBlockTime whole = turns_.count > 1 ? WholeBlockTime::every_rank : WholeBlockTime::slowest_rank;
    const std::vector<double> forward = paired_seconds(everyone(world, forward_), whole),
                              backward = paired_seconds(everyone(world, backward_), whole);
    std::vector<std::pair<double, double>> out;
    for (std::size_t i = 0; i < blocks_.size(); ++i) out.emplace_back(forward[i], backward[i]);
    return out;
  }

 private:
  /// Collective: every rank's time of each block in each round (forward_ or backward_).
  static std::vector<RoundTimes> everyone(comm::Communicator& world, const std::vector<std::vector<double>>& mine) {
    std::vector<RoundTimes> times(mine.size());
    for (std::size_t i = 0; i < mine.size(); ++i)
      for (double t : mine[i]) times[i].push_back(gather_everywhere(world, t));
    return times;
  }

  /// One turn of the waiting probe per group of ranks: the group's ranks compute the first
  /// block's forward and backward while the others wait for them on a barrier as the engines
  /// wait for an exchange (rfa's spin, then naps of 0.2 ms between polls of MPI), each taking its
  /// process's CPU seconds over its wait, per thread. The turn starts from a barrier that polls
  /// without naps (nobody computes then), so that the ranks start within a poll of one another.
  void probe_waiting() {
    auto engine_barrier = [&] {
      polling_barrier(MPI_COMM_WORLD, wait_spin_, std::chrono::microseconds(200), "the waiting probe's barrier");
    };
    for (int g = 0; g < turns_.count; ++g) {
      polling_barrier(MPI_COMM_WORLD, std::chrono::milliseconds(60000), std::chrono::microseconds(200),
                      "the waiting probe's first barrier");
      if (g == turns_.mine) {
        problems_[0]->forward(*attn_[0]);
        problems_[0]->backward(*attn_[0]);
        engine_barrier();
        continue;
      }
      const double cpu = engine::process_cpu_seconds();
      const auto start = std::chrono::steady_clock::now();
      engine_barrier();
      const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      waiting_.push_back((engine::process_cpu_seconds() - cpu) / double(cpu_threads_) / std::max(waited, 1e-9));
    }
    napping_barrier(MPI_COMM_WORLD);
  }

  std::vector<CalibrationBlock> blocks_;
  Turns turns_;
  int cpu_threads_ = 0;
  std::chrono::milliseconds wait_spin_;
  std::vector<double> waiting_;  // the waiting probe's shares, this rank's turns
  std::unique_ptr<comm::Communicator> self_;
  std::vector<std::unique_ptr<engine::RingAttention>> attn_;
  std::vector<std::unique_ptr<LocalProblem<float>>> problems_;
  std::vector<std::vector<double>> forward_, backward_;
};

/// Takes --links GBPS,US[,NS[,BYTES]] (bandwidth in GB/s, latency in microseconds, CPU
/// nanoseconds per byte, the burst in bytes: model::Link) out of argv, if given (the other flags
/// are rfa_run's, parse_run_options reads them).
std::optional<model::Link> take_links(int& argc, char** argv) {
  std::optional<model::Link> links;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) != "--links") {
      argv[kept++] = argv[i];
      continue;
    }
    // Two to four comma-separated numbers, each read whole and finite.
    const std::string text = i + 1 < argc ? argv[i + 1] : "";
    std::vector<double> v;
    try {
      v = real_numbers("--links", text, 0.0);
    } catch (const OptionError&) {
      v.clear();  // refused below, with the form the option takes
    }
    const bool ok = v.size() >= 2 && v.size() <= 4 && v[0] > 0;
    require(ok,
            "--links takes GBPS,US[,NS[,BYTES]] (bandwidth in GB/s above 0, latency in microseconds, the CPU "
            "nanoseconds a byte's transfer costs the cores at its ends, and the bytes the link passes at once "
            "after a pause), got '",
            text, "'");
    const double gbps = v[0], us = v[1], ns = v.size() > 2 ? v[2] : 0.0, burst = v.size() > 3 ? v[3] : 0.0;
    links = model::Link{us * 1e-6, gbps * 1e9, ns * 1e-9, burst};
    ++i;
  }
  argc = kept;
  argv[argc] = nullptr;
  return links;
}

/// What the kernels' calibration times, and how: the model's node (every rank of the job on
/// one, its cores shared where there are fewer than ranks), the turns the ranks take and the
/// blocks.
struct CalibrationPlan {
  model::MachineModel machine;
  Turns turns;
  int cpu_threads = 0;                   // KernelTimer's: a rank's threads where ranks share cores, else 0
  std::vector<CalibrationBlock> blocks;  // calibration_blocks(): the whole block is a rank's rows
};

CalibrationPlan plan_calibration(comm::Communicator& world, const RunOptions& o) {
  CalibrationPlan plan;
  model::MachineModel& m = plan.machine;
  Turns& turns = plan.turns;
  const int P = world.size();
  m.ranks_per_node = P;  // one node: every rank of the job shares its memory
  // Ranks on fewer cores than ranks (oversubscribed) share them; the kernels are measured in
  // turns of as many ranks as there are cores (Turns), a rank's rate on a core of its own.
  const int threads = Kokkos::DefaultHostExecutionSpace().concurrency();
  const double units = double(collective::node_cpus(MPI_COMM_WORLD, "rfa_model_check's CPUs")) / double(threads);
  if (units < double(P)) {
    m.compute_units_per_node = units;
    turns.count = int(std::ceil(double(P) / std::max(1.0, std::floor(units))));
    turns.mine = world.rank() % turns.count;
    // A rank measured in its turn still loses slices of its core to the waiting ranks and the
    // links' TCP processing: over eight "nodes" on two cores its wall-clock rate came out 8-28%
    // below the rate at two and four nodes in the same runs, and the hybrid's larger calls ran
    // faster than it predicted (perf/RESULTS.md, "2026-12-02 (sixth session) — the kernels'
    // calibration between the rounds, on CPU time where ranks share cores"). Its threads' CPU
    // time is its rate on a core of its own.
    plan.cpu_threads = threads;
  }
  engine::AttentionConfig rows = attention_config(o);
  rows.seq_total = o.seq / P;
  plan.blocks = calibration_blocks(rows, o.seq);
  return plan;
}

/// What rfa_model_check prints of the waiting ranks' share (MachineModel::waiting_rank_share).
std::string waiting_text(const model::MachineModel& m, int cpu_threads) {
  if (cpu_threads <= 0) return "a waiting rank's share of a core: not measured (each rank has cores of its own)";
  char text[96];
  std::snprintf(text, sizeof text, "a waiting rank takes %.1f%% of its unit (%d core(s))", 100 * m.waiting_rank_share,
                cpu_threads);
  return text;
}

/// The copies' rate and the links (as given, if they are; else the ring exchange measured).
void measure_copies_and_links(comm::Communicator& world, const RunOptions& o, const std::optional<model::Link>& links,
                              const engine::AttentionConfig& block, model::MachineModel& m) {
  const int P = world.size();
  // Local copies as the all-to-alls pack: a [rows][heads][d] fp32 tensor regrouped by head,
  // every rank at once.
  {
    const std::size_t rows = std::size_t(o.seq), heads = std::size_t(o.heads), d = std::size_t(o.head_dim);
    std::vector<float> from(rows * heads * d, 1.0f), to(from.size());
    auto regroup = [&] {
      for (std::size_t h = 0; h < heads; ++h)
        for (std::size_t r = 0; r < rows; ++r)
          std::memcpy(&to[(h * rows + r) * d], &from[(r * heads + h) * d], d * sizeof(float));
    };
    regroup();
    const double t = slowest_median(world, 5, regroup);
    m.copy_bytes_per_s = double(from.size() * sizeof(float)) / t;
  }
  // The ring exchange, two buffers at once as the engines send K and V: latency from 8 bytes,
  // bandwidth from a block's K and V.
  if (links) {
    m.intra_node = *links;
  } else if (P > 1) {
    const std::size_t bytes = std::size_t(block.batch * block.seq_total * block.kv_heads * block.head_dim) * 4;
    std::vector<unsigned char> send(2 * bytes, 1), recv(2 * bytes);
    auto exchange = [&](std::size_t n) {
      comm::Exchange a = world.start_ring_exchange(send.data(), recv.data(), n);
      comm::Exchange c = world.start_ring_exchange(send.data() + bytes, recv.data() + bytes, n);
      a.wait();
      c.wait();
    };
    exchange(bytes);
    const double small = slowest_median(world, 20, [&] { exchange(8); });
    const double large = slowest_median(world, std::max(o.repeat, 5), [&] { exchange(bytes); });
    m.intra_node.latency_s = small;
    m.intra_node.bytes_per_s = 2.0 * double(bytes) / std::max(large - small, 1e-9);
  }
  m.inter_node = m.intra_node;
}

int run(int me, int argc, char** argv) {
  std::optional<model::Link> links;
  RunOptions o;
  try {
    links = take_links(argc, argv);
    o = parse_run_options(argc, argv);
  } catch (const Error& e) {
    // Same argv on every rank, same verdict: rank 0 speaks.
    if (me == 0) std::fprintf(stderr, "rfa_model_check: error: %s\n", e.what());
    return 2;
  }
  if (o.help) {
    if (me == 0)
      std::printf(
          "usage: mpirun -np P rfa_model_check [--seq N] [--heads N] [--kv-heads N] [--head-dim N] [--batch N] "
          "[--repeat N] [--json FILE] [--links GBPS,US[,NS[,BYTES]]]\nThe performance model's predictions against "
          "measured "
          "times of every strategy on these ranks (fp32). --links: the links' bandwidth (GB/s) and latency (us), "
          "which every ring hop crosses, instead of the exchange measured here, and the CPU nanoseconds a byte's "
          "transfer costs the cores at its ends (a host TCP stack's; 0 if left out) and the bytes the link passes at "
          "once after a pause (a token bucket shaper's burst; 0 if left out).\n");
    return 0;
  }
  o.dtype = RFA_DTYPE_FLOAT32;
  auto world = comm::make_mpi_communicator(MPI_COMM_WORLD, me);
  const int P = world->size();
  o.seq -= o.seq % (2 * P);  // every layout splits it (zigzag: 2P chunks)
  const CalibrationPlan plan = plan_calibration(*world, o);
  model::MachineModel m = plan.machine;
  measure_copies_and_links(*world, o, links, plan.blocks[kWholeBlock].config, m);
  KernelTimer kernels(plan.blocks, plan.turns, plan.cpu_threads);
  struct Case {
    std::string label;
    StrategyChoice choice;
    rfa_layout_t layout;
  };
  std::vector<Case> strategies;
  for (rfa_layout_t layout : {RFA_LAYOUT_ZIGZAG, RFA_LAYOUT_CONTIGUOUS, RFA_LAYOUT_STRIPE})
    strategies.push_back({std::string("ring, ") + layout::layout_name(layout), {StrategyKind::ring, 0, 1}, layout});
  strategies.push_back({"ulysses", {StrategyKind::ulysses, 0, 1}, RFA_LAYOUT_ZIGZAG});
  strategies.push_back({"allgather", {StrategyKind::allgather, 0, 1}, RFA_LAYOUT_ZIGZAG});
  for (int degree = 2; degree < P; ++degree)
    if (P % degree == 0)
      strategies.push_back({"hybrid " + std::to_string(degree), {StrategyKind::hybrid, degree, 1}, RFA_LAYOUT_ZIGZAG});
  // Every case is made and warmed up first; then each round runs every case's forward and
  // backward once, so that a disturbance of a few seconds (the machine's drift, a burst on the
  // shaped links) lands on one round of many cases, which their medians drop, instead of on
  // every round of one case. Cases on the same rows share their tensors.
  struct Measured {
    std::string label;
    int mask = 0;
    engine::AttentionConfig cfg;
    StrategyChoice choice;
    std::unique_ptr<engine::AttentionStrategy> attn;
    LocalProblem<float>* problem = nullptr;
    std::vector<double> forward, backward, forward_compute, backward_compute;
  };
  std::vector<Measured> measured;
  std::vector<std::pair<PositionMap, std::unique_ptr<LocalProblem<float>>>> problems;
  for (const Case& k : strategies)
    for (int mask = 0; mask < 3; ++mask) {
      RunOptions c = o;
      c.mask = mask == 2 ? RFA_MASK_NONE : RFA_MASK_CAUSAL;
      c.window = mask == 1 ? o.seq / 8 : 0;
      c.layout = k.layout;
      Measured x;
      x.label = k.label;
      x.mask = mask;
      x.cfg = attention_config(c);
      x.choice = k.choice;
      try {
        engine::validate_strategy(x.choice, x.cfg, P);
      } catch (const Error&) {
        continue;  // the same verdict on every rank
      }
      x.attn = engine::make_strategy(*world, x.cfg, x.choice);
      const PositionMap rows = x.attn->local_positions();
      for (auto& [held, problem] : problems)
        if (same_positions(held, rows)) x.problem = problem.get();
      if (x.problem == nullptr) {
        problems.emplace_back(rows, std::make_unique<LocalProblem<float>>(*x.attn));
        x.problem = problems.back().second.get();
      }
      x.problem->forward(*x.attn);
      x.problem->backward(*x.attn);
      measured.push_back(std::move(x));
    }
  // The kernels' share of each pass, measured and predicted, tells a kernel rate that is off
  // from communication or overlap that is.
  auto timed = [&](Measured& x, bool backward) {
    world->barrier();
    const auto start = std::chrono::steady_clock::now();
    backward ? x.problem->backward(*x.attn) : x.problem->forward(*x.attn);
    (backward ? x.backward : x.forward)
        .push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    (backward ? x.backward_compute : x.forward_compute).push_back(x.attn->last_timings().compute);
  };
  // The calibration's rounds (at least 7: a block's few milliseconds repeat less well than a
  // whole pass) take turns with the cases', spread evenly among them.
  const int calibration_rounds = std::max(o.repeat, 7);
  for (int r = 0; r < calibration_rounds; ++r) {
    kernels.round();
    if ((r + 1) * o.repeat / calibration_rounds > r * o.repeat / calibration_rounds)
      for (Measured& x : measured) {
        timed(x, false);
        timed(x, true);
      }
  }
  fit_kernels(m, plan.blocks, kernels.seconds(*world));
  m.waiting_rank_share = kernels.waiting_share(*world);
  if (me == 0) {
    std::printf(
        "rfa_model_check: %d rank(s), B=%lld S=%lld H=%lld/%lld d=%s fp32, medians of %d rounds of every case, slowest "
        "rank\n",
        P, (long long)o.batch, (long long)o.seq, (long long)o.heads, (long long)o.kv_heads, head_dims_label(o).c_str(),
        o.repeat);
    std::printf(
        "calibrated: kernels %.1f / %.1f GFLOP/s per rank on a core of its own (forward / backward, whole "
        "tiles; %d rank(s) on %.0f core(s)%s), %.0f / %.0f ns per query or key row and head of a call, x%.2f / x%.2f "
        "on one packed K/V head; a masked tile costs %.2f / %.2f whole tiles' scores plus %.2f / %.2f per visible "
        "score; copies %.1f GB/s; exchange %.1f us, %.2f GB/s, %.2f CPU ns per byte, a burst of %.0f kB%s; %s\n",
        m.forward_flops_per_s / 1e9, m.backward_flops_per_s / 1e9, P,
        m.compute_units_per_node > 0 ? m.compute_units_per_node : double(P),
        plan.cpu_threads > 0 ? ", their CPU time" : "", 1e9 * m.forward_row_seconds, 1e9 * m.backward_row_seconds,
        m.packed_head_forward_speedup, m.packed_head_backward_speedup, m.forward_masked_tile_cost,
        m.backward_masked_tile_cost, m.forward_masked_visible_cost, m.backward_masked_visible_cost,
        m.copy_bytes_per_s / 1e9, m.intra_node.latency_s * 1e6, m.intra_node.bytes_per_s / 1e9,
        1e9 * m.intra_node.cpu_seconds_per_byte, m.intra_node.burst_bytes / 1e3, links ? " (given)" : "",
        waiting_text(m, plan.cpu_threads).c_str());
    std::printf("%-22s %-14s %10s %10s %6s %10s %10s %6s\n", "strategy", "mask", "fwd pred", "fwd meas", "ratio",
                "bwd pred", "bwd meas", "ratio");
  }
  double worst = 0;
  std::vector<BenchCase> cases;
  for (const Measured& x : measured) {
    const double f = slowest(*world, median(x.forward)), b = slowest(*world, median(x.backward));
    const double fk = slowest(*world, median(x.forward_compute)), bk = slowest(*world, median(x.backward_compute));
    const model::Prediction p = model::predict(x.cfg, x.choice, P, m);
    const double rf = p.forward.seconds / f, rb = p.backward.seconds / b;
    worst = std::max({worst, std::abs(rf - 1), std::abs(rb - 1)});
    const char* masks[3] = {"causal", "causal, w=S/8", "none"};
    if (me == 0)
      std::printf("%-22s %-14s %10.1f %10.1f %6.2f %10.1f %10.1f %6.2f\n", x.label.c_str(), masks[x.mask],
                  1e3 * p.forward.seconds, 1e3 * f, rf, 1e3 * p.backward.seconds, 1e3 * b, rb);
    BenchCase bc;
    bc.name = "model/" + x.label + "/" + masks[x.mask] + "/P=" + std::to_string(P);
    bc.labels = {{"suite", "model_check"}, {"strategy", x.label}, {"mask", masks[x.mask]}};
    bc.counters = {{"ranks", double(P)},
                   {"predicted_forward_ms", 1e3 * p.forward.seconds},
                   {"measured_forward_ms", 1e3 * f},
                   {"predicted_backward_ms", 1e3 * p.backward.seconds},
                   {"measured_backward_ms", 1e3 * b},
                   {"predicted_forward_compute_ms", 1e3 * p.forward.compute_seconds},
                   {"measured_forward_compute_ms", 1e3 * fk},
                   {"predicted_backward_compute_ms", 1e3 * p.backward.compute_seconds},
                   {"measured_backward_compute_ms", 1e3 * bk}};
    if (m.waiting_rank_share > 0) {
      // What the waiting ranks' share adds to the prediction: the same without it.
      model::MachineModel unshared = m;
      unshared.waiting_rank_share = 0;
      const model::Prediction q = model::predict(x.cfg, x.choice, P, unshared);
      bc.counters["predicted_forward_ms_without_waiting"] = 1e3 * q.forward.seconds;
      bc.counters["predicted_backward_ms_without_waiting"] = 1e3 * q.backward.seconds;
    }
    bc.repetitions.push_back({f + b, {}});
    cases.push_back(bc);
  }
  if (me == 0) std::printf("largest deviation of a prediction from its measurement: %.1f%%\n", 100 * worst);
  if (me == 0 && !o.json.empty()) {
    ContextFields context = collect_run_context("rfa_model_check");
    set_field(context, "suite", "model_check");
    set_field(context, "ranks", std::to_string(P));
    set_field(context, "packed_head_speedup",
              std::to_string(m.packed_head_forward_speedup) + " / " + std::to_string(m.packed_head_backward_speedup));
    set_field(context, "masked_tile_cost",
              std::to_string(m.forward_masked_tile_cost) + " / " + std::to_string(m.backward_masked_tile_cost));
    set_field(context, "masked_visible_cost",
              std::to_string(m.forward_masked_visible_cost) + " / " + std::to_string(m.backward_masked_visible_cost));
    set_field(context, "links", links ? "given" : "measured by the check");
    set_field(context, "link_gbps", std::to_string(m.intra_node.bytes_per_s / 1e9));
    set_field(context, "link_latency_us", std::to_string(m.intra_node.latency_s * 1e6));
    set_field(context, "link_burst_bytes", std::to_string(m.intra_node.burst_bytes));
    if (plan.cpu_threads > 0) set_field(context, "waiting_rank_share", std::to_string(m.waiting_rank_share));
    write_results_json(o.json, context, cases);
    std::printf("results written to %s\n", o.json.c_str());
  }
  return 0;
}

}  // namespace
}  // namespace perf
}  // namespace rfa

int main(int argc, char** argv) { return rfa::perf::run_mpi_program(argc, argv, "rfa_model_check", rfa::perf::run); }
