// SPDX-License-Identifier: BSD-3-Clause
// Timing of ring passes for the main job and the ring benchmark: every repetition's time on
// every rank is kept, so figures come with their spread over repetitions and ranks instead
// of one rank's best run, and the same samples feed the JSON results.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "cpu_peak.hpp"
#include "engine/ring_attention.hpp"
#include "result_json.hpp"
#include "ring_problem.hpp"
#include "run_context.hpp"
#include "run_options.hpp"

namespace rfa {
namespace perf {

/// One pass (forward or backward) of one schedule, timed `repetitions` times on every rank.
struct PassSamples {
  std::vector<std::vector<double>> total;    ///< [repetition][ring position], seconds
  std::vector<std::vector<double>> wait;     ///< time blocked in exchange waits, same shape
  std::vector<std::vector<double>> compute;  ///< wall time in the kernels, same shape
  /// CPU seconds each rank's process used computing, same shape: its work, whatever shares its
  /// cores (engine::PassTimings::compute_cpu)
  std::vector<std::vector<double>> compute_cpu;
  std::int64_t bytes_moved = 0;        ///< bytes all ranks sent in one pass
  std::int64_t bytes_sent_max = 0;     ///< the most bytes one rank sent in one pass
  std::int64_t workspace_max = 0;      ///< the most engine workspace one rank allocated
  std::vector<double> steps_computed;  ///< per ring position: steps whose block was not fully masked
  std::int64_t steps_on_cudnn = 0;     ///< over all ranks: steps cuDNN computed (CUDA contexts)

  /// The ring's time in each repetition: its slowest rank.
  std::vector<double> slowest() const {
    std::vector<double> s;
    for (const auto& rep : total) s.push_back(*std::max_element(rep.begin(), rep.end()));
    return s;
  }
  /// The work balance of each repetition: the most compute CPU seconds of a rank over their
  /// mean over ranks (1: even); 0 where nothing was computed.
  std::vector<double> compute_balance() const {
    std::vector<double> s;
    for (const auto& rep : compute_cpu) {
      double sum = 0, most = 0;
      for (double x : rep) {
        sum += x;
        most = std::max(most, x);
      }
      s.push_back(sum > 0 ? most * double(rep.size()) / sum : 0.0);
    }
    return s;
  }
};

/// {median, min, max} of a set of values.
struct Spread {
  double median = 0, min = 0, max = 0;
};

inline Spread spread_of(const std::vector<double>& values) {
  Spread s;
  if (values.empty()) return s;
  s.median = perf::median(values);
  s.min = *std::min_element(values.begin(), values.end());
  s.max = *std::max_element(values.begin(), values.end());
  return s;
}

/// Collective: every rank's `value`, in ring-position order, on every rank.
inline std::vector<double> gather_everywhere(comm::Communicator& ring, double value) {
  std::vector<double> all(std::size_t(ring.size()));
  ring.allgather(&value, all.data(), sizeof value);
  return all;
}

/// Collective: appends every rank's time of one pass and what its engine (a RingAttention or
/// any AttentionStrategy) counted in it.
template <class Engine>
void record_pass(comm::Communicator& ring, double seconds, const Engine& engine, PassSamples& into) {
  const engine::PassTimings& t = engine.last_timings();
  into.total.push_back(gather_everywhere(ring, seconds));
  into.wait.push_back(gather_everywhere(ring, t.wait));
  into.compute.push_back(gather_everywhere(ring, t.compute));
  into.compute_cpu.push_back(gather_everywhere(ring, t.compute_cpu));
  into.bytes_moved = ring.allreduce(t.bytes_sent, comm::ReduceOp::sum);
  into.bytes_sent_max = ring.allreduce(t.bytes_sent, comm::ReduceOp::max);
  into.workspace_max = ring.allreduce(engine.last_workspace_bytes(), comm::ReduceOp::max);
  into.steps_computed = gather_everywhere(ring, double(t.steps_computed));
  into.steps_on_cudnn = ring.allreduce(std::int64_t(t.steps_on_cudnn), comm::ReduceOp::sum);
}

/// Collective: runs `pass` once, after a barrier, and records it: wall time around the call
/// (for a device problem, waiting for the GPU included) and what `engine` counted.
template <class Engine, class Pass>
void time_pass(comm::Communicator& ring, const Engine& engine, Pass&& pass, PassSamples& into) {
  ring.barrier();
  const auto start = std::chrono::steady_clock::now();
  pass();
  record_pass(ring, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), engine, into);
}

/// Collective: one pass of the ring (a RingAttention, or the ring strategy) in `mode` (the
/// overlap measurements need all three).
template <class Engine, class Problem>
void time_pass(comm::Communicator& ring, Engine& attn, Problem& lp, engine::RingMode mode, bool backward,
               PassSamples& into) {
  time_pass(
      ring, attn,
      [&] {
        if (backward) {
          lp.backward(attn, mode);
        } else {
          lp.forward(attn, mode);
        }
      },
      into);
}

/// The hidden share of communication of every (repetition, rank): 1 - (full - compute_only) /
/// comm_only, each rank against its own runs of the other two schedules.
inline std::vector<double> hidden_samples(const PassSamples& full, const PassSamples& compute_only,
                                          const PassSamples& comm_only) {
  std::vector<double> h;
  const std::size_t reps = std::min({full.total.size(), compute_only.total.size(), comm_only.total.size()});
  for (std::size_t r = 0; r < reps; ++r)
    for (std::size_t k = 0; k < full.total[r].size(); ++k)
      h.push_back(hidden_fraction(full.total[r][k], compute_only.total[r][k], comm_only.total[r][k]));
  return h;
}

/// Whether communication alone is long enough to be told apart from the ring time's noise
/// (its spread over repetitions); needs at least two repetitions.
inline bool overlap_measurable(const PassSamples& full, const PassSamples& comm_only) {
  const Spread ring = spread_of(full.slowest());
  return full.total.size() >= 2 && spread_of(comm_only.slowest()).median > ring.max - ring.min;
}

/// The job's peak on the host: P ranks of `threads` threads at the single-core peak measured
/// here, for the products the kernels of these options run on (bf16's hardware products where
/// they are used, the fp32 FMA peak otherwise).
inline double host_job_peak(const RunOptions& o, int P, int threads) {
  kernels::AttentionParams p = kernels::make_params(o.batch, o.seq / P, o.seq, o.heads, o.kv_heads, o.head_dim, o.mask);
  p.softcap = o.softcap;
  p.value_dim = o.value_dim == o.head_dim ? 0 : o.value_dim;
  const kernels::Bf16Products products =
      o.dtype == RFA_DTYPE_BFLOAT16 ? kernels::host_bf16_products(p) : kernels::Bf16Products::none;
  return measure_core_peak(products) * P * threads;
}

/// "123.4 (61%)": GFLOP/s of `flops` done in `seconds`, with its fraction of `peak_flops` (the
/// whole job's measured peak; "-" where none was measured).
inline std::string rate_text(double flops, double seconds, double peak_flops) {
  char text[48];
  if (peak_flops > 0)
    std::snprintf(text, sizeof text, "%.1f (%.0f%%)", flops / seconds * 1e-9, 100 * flops / seconds / peak_flops);
  else
    std::snprintf(text, sizeof text, "%.1f (-)", flops / seconds * 1e-9);
  return text;
}

/// The configuration as a label: "B=1 S=8192 H=8/8 d=64 causal" (d=192/128 where V's head dim
/// differs; a mask given as ranges by its
/// --mask spec; " window W", " documents SPEC" and " softcap C" after it when set).
inline std::string shape_label(const RunOptions& o) {
  return "B=" + std::to_string(o.batch) + " S=" + std::to_string(o.seq) + " H=" + std::to_string(o.heads) + "/" +
         std::to_string(o.kv_heads) + " d=" + head_dims_label(o) +
         (o.mask == RFA_MASK_CAUSAL   ? " causal"
          : o.mask == RFA_MASK_RANGES ? " " + o.mask_spec
                                      : " non-causal") +
         variant_label(o.window, o.documents_spec, o.softcap);
}

/// One JSON case of a pass of `strategy` ("ring", "ulysses", ...): per repetition the slowest
/// rank's time, TFLOP/s over the scores the mask leaves visible (tflops) and by FlashAttention's
/// convention (tflops_flash_convention), the fraction of `peak_flops` (the whole job's measured
/// peak; 0: not measured), the slowest and fastest rank, and the hidden share when measured.
inline BenchCase ring_case(const std::string& name, const RunOptions& o, const char* layout, const PassSamples& full,
                           const PassFlops& flops, double peak_flops, const std::vector<double>* hidden_per_rep_rank,
                           const std::string& strategy = "ring") {
  BenchCase c;
  c.name = name;
  c.labels = {{"suite", "ring"},
              {"strategy", strategy},
              {"layout", layout},
              {"dtype", dtype_name(o.dtype)},
              {"shape", shape_label(o)}};
  c.counters["bytes_moved"] = double(full.bytes_moved);
  c.counters["bytes_sent_rank_max"] = double(full.bytes_sent_max);
  c.counters["workspace_bytes_rank_max"] = double(full.workspace_max);
  const std::size_t P = full.total.empty() ? 0 : full.total[0].size();
  const std::vector<double> balance = full.compute_balance();
  for (std::size_t r = 0; r < full.total.size(); ++r) {
    const auto& ranks = full.total[r];
    Repetition rep;
    rep.seconds = *std::max_element(ranks.begin(), ranks.end());
    rep.counters["tflops"] = flops.visible / rep.seconds * 1e-12;
    rep.counters["tflops_flash_convention"] = flops.flash_convention / rep.seconds * 1e-12;
    if (peak_flops > 0) rep.counters["peak_fraction"] = flops.visible / rep.seconds / peak_flops;
    rep.counters["rank_max_s"] = rep.seconds;
    rep.counters["rank_min_s"] = *std::min_element(ranks.begin(), ranks.end());
    rep.counters["wait_max_s"] = *std::max_element(full.wait[r].begin(), full.wait[r].end());
    if (r < balance.size()) {
      rep.counters["compute_cpu_balance"] = balance[r];
      rep.counters["compute_cpu_rank_max_s"] =
          *std::max_element(full.compute_cpu[r].begin(), full.compute_cpu[r].end());
    }
    if (hidden_per_rep_rank && hidden_per_rep_rank->size() >= (r + 1) * P) {
      const std::vector<double> h(hidden_per_rep_rank->begin() + std::ptrdiff_t(r * P),
                                  hidden_per_rep_rank->begin() + std::ptrdiff_t((r + 1) * P));
      const Spread s = spread_of(h);
      rep.counters["hidden_fraction"] = s.median;
      rep.counters["hidden_fraction_rank_min"] = s.min;
      rep.counters["hidden_fraction_rank_max"] = s.max;
    }
    c.repetitions.push_back(rep);
  }
  return c;
}

/// The provenance of a ring run: the shared fields plus ranks, ring order and strategy.
inline ContextFields ring_context(const std::string& program, int ranks, const std::string& ring_order,
                                  const RunOptions& o, int threads_per_rank, const std::string& strategy = "ring") {
  ContextFields c = collect_run_context(program);
  set_field(c, "suite", "ring");
  set_field(c, "ranks", std::to_string(ranks));
  set_field(c, "threads_per_rank", std::to_string(threads_per_rank));
  set_field(c, "ring_order", ring_order);
  set_field(c, "strategy", strategy);
  set_field(c, "dtype", dtype_name(o.dtype));
  set_field(c, "shape", shape_label(o));
  return c;
}

}  // namespace perf
}  // namespace rfa
