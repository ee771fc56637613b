// SPDX-License-Identifier: BSD-3-Clause
// rfa_model_check: the performance model (model/performance_model.hpp) against measurement, on
// the ranks it runs on. It calibrates the model's machine from measurements taken on the same
// ranks at the same time (a rank's whole-tile kernel rate, over interleaved heads and over one
// packed K/V head, what a masked tile costs, and the ring exchange's latency and bandwidth),
// then runs every strategy (the ring on each layout, Ulysses, the KV all-gather and the hybrid
// grids that fit) on causal, windowed and unmasked problems and prints the predicted and the
// measured time of each pass, slowest rank, and their ratio. fp32 (the portable kernels, whose
// tiles the model counts).
//
//   mpiexec -n P rfa_model_check [--seq N] [--heads N] [--head-dim N] [--repeat N] [--json FILE]
#include <mpi.h>

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "collective/node_cpus.hpp"
#include "comm/mpi/mpi_communicator.hpp"
#include "core/error.hpp"
#include "engine/attention_strategy.hpp"
#include "layout/sequence_layout.hpp"
#include "model/performance_model.hpp"
#include "model/tile_work.hpp"
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
  const double m = median(mine);
  double worst = m;
  for (double x : gather_everywhere(world, m)) worst = std::max(worst, x);
  return worst;
}

/// One rank's kernels on a block of its own (every rank at once, each on MPI_COMM_SELF): the
/// slowest rank's median kernel time of `calls` calls in a row, forward and backward.
std::pair<double, double> block_seconds(comm::Communicator& world, const engine::RingConfig& cfg, int repeat,
                                        int calls = 1) {
  auto self = comm::make_mpi_communicator(MPI_COMM_SELF, 0);
  engine::RingAttention attn(*self, cfg);
  LocalProblem<float> lp(attn);
  lp.forward(attn);
  lp.backward(attn);
  std::vector<double> f, b;
  for (int r = 0; r < repeat; ++r) {
    double fr = 0, br = 0;
    world.barrier();
    for (int c = 0; c < calls; ++c) {
      lp.forward(attn);
      fr += attn.last_timings().compute;
    }
    world.barrier();
    for (int c = 0; c < calls; ++c) {
      lp.backward(attn);
      br += attn.last_timings().compute;
    }
    f.push_back(fr);
    b.push_back(br);
  }
  double fw = median(f), bw = median(b);
  for (double x : gather_everywhere(world, fw)) fw = std::max(fw, x);
  for (double x : gather_everywhere(world, bw)) bw = std::max(bw, x);
  return {fw, bw};
}

/// The machine as measured on these ranks.
model::MachineModel calibrate(comm::Communicator& world, const RunOptions& o) {
  model::MachineModel m;
  const int P = world.size();
  m.ranks_per_node = P;  // one node: every rank of the job shares its memory
  // Ranks on fewer cores than ranks (oversubscribed) share them; the rates below are measured
  // with every rank busy, and the model wants a rank's rate on a core of its own.
  const double units = double(collective::node_cpus(MPI_COMM_WORLD, "rfa_model_check's CPUs")) /
                       double(Kokkos::DefaultHostExecutionSpace().concurrency());
  if (units < double(P)) m.compute_units_per_node = units;
  const double share = units < double(P) ? units / double(P) : 1.0;
  engine::RingConfig block = ring_config(o);
  block.seq_total = o.seq / P;
  block.layout = RFA_LAYOUT_CONTIGUOUS;
  block.window = 0;
  block.mask = RFA_MASK_NONE;
  const double scores = double(block.batch * block.heads) * double(block.seq_total) * double(block.seq_total);
  const double flops = 4.0 * double(block.head_dim) * scores;
  const auto [f, b] = block_seconds(world, block, o.repeat);
  m.forward_flops_per_s = flops / f / share;
  m.backward_flops_per_s = 2.5 * flops / b / share;
  // Calls over one K/V head (with its query heads) on packed rows, as the all-gather makes them:
  // one such call per K/V head, the same scores as the interleaved heads above in as long a run
  // (calls much shorter than the others would be timed differently on shared cores).
  {
    engine::RingConfig one = block;
    one.heads = block.heads / block.kv_heads;
    one.kv_heads = 1;
    const auto [f1, b1] = block_seconds(world, one, o.repeat, int(block.kv_heads));
    m.packed_head_forward_speedup = f / f1;
    m.packed_head_backward_speedup = b / b1;
  }
  // Masked tiles: a causal block (its diagonal tiles) and a windowed one (tiles along both edges
  // of a band) with the window the checked problems use (S/8, the band's tiles cut as theirs
  // are), two equations for what a masked tile costs.
  const PositionMap rows = PositionMap::contiguous(0, block.seq_total);
  const double per_score = 4.0 * double(block.head_dim * block.batch * block.heads);
  double lhs[2][2], rhs[2][2];  // [pass][equation]: masked scores, and what they cost
  for (int e = 0; e < 2; ++e) {
    block.mask = RFA_MASK_CAUSAL;
    block.window = e == 0 ? 0 : std::max<std::int64_t>(1, std::min<std::int64_t>(o.seq / 8, block.seq_total - 1));
    const auto [fm, bm] = block_seconds(world, block, o.repeat);
    const kernels::MaskRule rule{true, block.window, nullptr, 0};
    const model::TileWork wf = model::count_tile_work(rule, rows, rows, m.forward_tile_q, m.forward_tile_k);
    const model::TileWork wb = model::count_tile_work(rule, rows, rows, m.backward_tile_q, m.backward_tile_k);
    lhs[0][e] = wf.partial;
    rhs[0][e] = fm * m.forward_flops_per_s * share / per_score - wf.full;  // as measured: shared
    lhs[1][e] = wb.partial;
    rhs[1][e] = bm * m.backward_flops_per_s * share / (2.5 * per_score) - wb.full;
  }
  // One cost per score of a masked tile, fitted to both equations, each to its relative error.
  // A second unknown per visible score would be ill-posed: the diagonal's and a band's edges
  // show about the same visible share, so the two equations are nearly parallel and their exact
  // solution swings with the noise (from 0 to 2.4 per score between runs of one build).
  for (int pass = 0; pass < 2; ++pass) {
    double num = 0, den = 0;
    for (int e = 0; e < 2; ++e) {
      const double y = rhs[pass][e], x = lhs[pass][e];
      num += x * y / (y * y);
      den += x * x / (y * y);
    }
    (pass == 0 ? m.forward_masked_tile_cost : m.backward_masked_tile_cost) = den > 0 ? std::max(0.0, num / den) : 1.0;
  }
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
  if (P > 1) {
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
  return m;
}

int run(int me, int argc, char** argv) {
  RunOptions o = parse_run_options(argc, argv);
  if (o.help) {
    if (me == 0)
      std::printf(
          "usage: mpirun -np P rfa_model_check [--seq N] [--heads N] [--kv-heads N] [--head-dim N] [--batch N] "
          "[--repeat N] [--json FILE]\nThe performance model's predictions against measured times of every strategy on "
          "these "
          "ranks (fp32).\n");
    return 0;
  }
  o.dtype = RFA_DTYPE_FLOAT32;
  auto world = comm::make_mpi_communicator(MPI_COMM_WORLD, me);
  const int P = world->size();
  o.seq -= o.seq % (2 * P);  // every layout splits it (zigzag: 2P chunks)
  const model::MachineModel m = calibrate(*world, o);
  if (me == 0) {
    std::printf("rfa_model_check: %d rank(s), B=%lld S=%lld H=%lld/%lld d=%lld fp32, medians of %d, slowest rank\n", P,
                (long long)o.batch, (long long)o.seq, (long long)o.heads, (long long)o.kv_heads, (long long)o.head_dim,
                o.repeat);
    std::printf(
        "calibrated: kernels %.1f / %.1f GFLOP/s per rank on a core of its own (forward / backward, whole "
        "tiles; %d rank(s) on %.0f core(s)), x%.2f / x%.2f on one packed K/V head; a masked tile costs %.2f / "
        "%.2f whole tiles' scores; copies %.1f GB/s; exchange %.1f us, %.2f GB/s\n",
        m.forward_flops_per_s / 1e9, m.backward_flops_per_s / 1e9, P,
        m.compute_units_per_node > 0 ? m.compute_units_per_node : double(P), m.packed_head_forward_speedup,
        m.packed_head_backward_speedup, m.forward_masked_tile_cost, m.backward_masked_tile_cost,
        m.copy_bytes_per_s / 1e9, m.intra_node.latency_s * 1e6, m.intra_node.bytes_per_s / 1e9);
    std::printf("%-22s %-14s %10s %10s %6s %10s %10s %6s\n", "strategy", "mask", "fwd pred", "fwd meas", "ratio",
                "bwd pred", "bwd meas", "ratio");
  }
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
  double worst = 0;
  std::vector<BenchCase> cases;
  for (const Case& k : strategies)
    for (int mask = 0; mask < 3; ++mask) {
      RunOptions c = o;
      c.mask = mask == 2 ? RFA_MASK_NONE : RFA_MASK_CAUSAL;
      c.window = mask == 1 ? o.seq / 8 : 0;
      c.layout = k.layout;
      const StrategyChoice& choice = k.choice;
      const std::string& label = k.label;
      const engine::RingConfig cfg = ring_config(c);
      try {
        engine::validate_strategy(choice, cfg, P);
      } catch (const Error&) {
        continue;  // the same verdict on every rank
      }
      auto attn = engine::make_strategy(*world, cfg, choice);
      LocalProblem<float> lp(*attn);
      lp.forward(*attn);
      lp.backward(*attn);
      const double f = slowest_median(*world, o.repeat, [&] { lp.forward(*attn); });
      const double b = slowest_median(*world, o.repeat, [&] { lp.backward(*attn); });
      const model::Prediction p = model::predict(cfg, choice, P, m);
      const double rf = p.forward.seconds / f, rb = p.backward.seconds / b;
      worst = std::max({worst, std::abs(rf - 1), std::abs(rb - 1)});
      const char* masks[3] = {"causal", "causal, w=S/8", "none"};
      if (me == 0)
        std::printf("%-22s %-14s %10.1f %10.1f %6.2f %10.1f %10.1f %6.2f\n", label.c_str(), masks[mask],
                    1e3 * p.forward.seconds, 1e3 * f, rf, 1e3 * p.backward.seconds, 1e3 * b, rb);
      BenchCase bc;
      bc.name = "model/" + label + "/" + masks[mask] + "/P=" + std::to_string(P);
      bc.labels = {{"suite", "model_check"}, {"strategy", label}, {"mask", masks[mask]}};
      bc.counters = {{"ranks", double(P)},
                     {"predicted_forward_ms", 1e3 * p.forward.seconds},
                     {"measured_forward_ms", 1e3 * f},
                     {"predicted_backward_ms", 1e3 * p.backward.seconds},
                     {"measured_backward_ms", 1e3 * b}};
      bc.repetitions.push_back({f + b, {}});
      cases.push_back(bc);
    }
  if (me == 0) std::printf("largest deviation of a prediction from its measurement: %.1f%%\n", 100 * worst);
  if (me == 0 && !o.json.empty()) {
    ContextFields context = collect_machine_context("rfa_model_check");
    set_field(context, "suite", "model_check");
    set_field(context, "packed_head_speedup",
              std::to_string(m.packed_head_forward_speedup) + " / " + std::to_string(m.packed_head_backward_speedup));
    write_results_json(o.json, context, cases);
    std::printf("results written to %s\n", o.json.c_str());
  }
  return 0;
}

}  // namespace
}  // namespace perf
}  // namespace rfa

int main(int argc, char** argv) { return rfa::perf::run_mpi_program(argc, argv, "rfa_model_check", rfa::perf::run); }
