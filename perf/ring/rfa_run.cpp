// SPDX-License-Identifier: BSD-3-Clause
// rfa_run: the main job. Ring attention forward and backward on an embedded problem split
// over the MPI ranks: a warm-up, timed repetitions, a check (the single-rank kernels on the
// full sequence, or sampled rows against float64 where that does not fit), and runs that
// measure how much communication compute hid. It says which phase runs, reports medians with
// their spread over repetitions and ranks, and writes the benchmarks' JSON with --json.
// See --help.
#include <mpi.h>

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cstdio>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "comm/agreement.hpp"
#include "comm/mpi/mpi_communicator.hpp"
#include "engine/attention_strategy.hpp"
#include "engine/cuda_kernel_choice.hpp"
#include "engine/engine_backends.hpp"
#include "rfa/rfa_config.h"
#if RFA_ENGINE_CUDA
#include <cuda_runtime_api.h>
#endif
#include "core/error.hpp"
#include "cpu_peak.hpp"
#include "engine/attention_config.hpp"
#include "engine/ring_attention.hpp"
#include "layout/sequence_layout.hpp"
#include "mpi_program.hpp"
#include "reference_check.hpp"
#include "ring_measure.hpp"
#include "ring_problem.hpp"
#include "run_context.hpp"
#include "run_options.hpp"
#include "sampled_check.hpp"
#include "setup/attention_setup.hpp"
#include "topology/order_policy.hpp"
#include "topology/ring_order.hpp"

namespace rfa {
namespace perf {
namespace {

using engine::RingMode;

/// Tolerances on the relative error against fp32 single-rank kernels (out; gradients get 2x).
double tolerance(rfa_dtype_t t) { return t == RFA_DTYPE_FLOAT32 ? 1e-4 : t == RFA_DTYPE_BFLOAT16 ? 2e-2 : 4e-3; }

/// Rank 0's progress line, flushed at once so that a long phase is never silent.
template <class... Args>
void progress(int me, const char* format, Args... args) {
  if (me != 0) return;
  std::printf(format, args...);
  std::fflush(stdout);
}

/// "1.23e-04".
std::string scientific(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2e", x);
  return text;
}

/// "2 ranks", "1 rank".
std::string ranks_text(int n) { return std::to_string(n) + (n == 1 ? " rank" : " ranks"); }

/// Collective: the largest count of (ranks x host threads) sharing one node, against the
/// cores they may use there; rank 0 says so when ranks outnumber cores.
void warn_if_oversubscribed(int me, int threads_per_rank) {
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int local_ranks = 1;
  MPI_Comm_size(node, &local_ranks);
  MPI_Comm_free(&node);
  // Ranks pinned to one core each see one core in their mask: count the node's cores then.
  const int cores = std::max(usable_cores(), int(std::thread::hardware_concurrency()));
  int over[2] = {local_ranks * threads_per_rank > cores ? local_ranks * threads_per_rank : 0, cores};
  MPI_Allreduce(MPI_IN_PLACE, over, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (me == 0 && over[0] > 0) {
    std::printf(
        "note: %d ranks x %d thread(s) share %d cores on one node: they take turns, so times are longer "
        "than the hardware can do and overlap figures mean little (use one rank per core: -np %d)\n",
        local_ranks, threads_per_rank, over[1], std::max(2, over[1] / threads_per_rank));
  }
}

/// Prints one pass's hidden share of communication with its spread, or why it is not given.
void print_hidden(const char* pass, const PassSamples& full, const PassSamples& compute_only,
                  const PassSamples& comm_only) {
  const Spread comm = spread_of(comm_only.slowest());
  const Spread ring = spread_of(full.slowest());
  if (full.total.size() < 2) {
    std::printf("  %s: not reported: one repetition says nothing about noise (--repeat 2 or more)\n", pass);
  } else if (!overlap_measurable(full, comm_only)) {
    std::printf(
        "  %s: not measurable: communication alone takes %.1f ms, within the ring time's spread of %.1f ms "
        "over repetitions\n",
        pass, 1e3 * comm.median, 1e3 * (ring.max - ring.min));
  } else {
    const Spread h = spread_of(hidden_samples(full, compute_only, comm_only));
    std::printf(
        "  %s: %.0f%% hidden (median over %zu repetitions x %zu ranks, range %.0f-%.0f%%); communication "
        "alone %.1f ms\n",
        pass, 100 * h.median, full.total.size(), full.total[0].size(), 100 * h.min, 100 * h.max, 1e3 * comm.median);
  }
}

/// Where this rank computes, for the headline: "2 host thread(s)/rank", or its GPU.
std::string compute_place(const RunOptions& o, int threads) {
#if RFA_ENGINE_CUDA
  if (o.device == RunDevice::cuda) {
    int device = -1;
    cudaGetDevice(&device);
    cudaDeviceProp prop{};
    cudaGetDeviceProperties(&prop, device);
    return std::string("GPU ") + std::to_string(device) + " (" + prop.name + ") per rank, transport ";
  }
#endif
  (void)o;
  return std::to_string(threads) + " host thread(s)/rank";
}

/// One pass of the chosen strategy, through the strategy interface on host or device memory;
/// modes other than full are the ring's (the overlap measurement runs them only there).
template <class T, class Problem>
struct Passes {
  engine::AttentionStrategy& strategy;
  Problem& lp;

  void run(bool backward, RingMode mode = RingMode::full) {
    if (backward)
      lp.backward(strategy, mode);
    else
      lp.forward(strategy, mode);
  }
};

/// `ring` carries the attention's buffers (device memory on GPUs); `control` the job's own
/// host-memory collectives (timings, the check's gathers), which a device transport refuses.
/// On the host both are the same MPI communicator.
template <class T, class Problem>
int run(setup::AttentionSetup& setup, comm::Communicator& control, const RunOptions& o) {
  comm::Communicator& ring = *setup.comm;
  const engine::AttentionConfig& cfg = setup.config;  // the CUDA kernels as chosen, the same everywhere
  const char* order_policy = topology::policy_name(setup.order.policy_used);
  const int P = ring.size(), me = ring.rank();
  const int threads = Kokkos::DefaultHostExecutionSpace().concurrency();
  const bool causal = o.mask == RFA_MASK_CAUSAL;
  const CheckMode check_mode = check_to_run(o);
  const bool check = check_mode != CheckMode::off;
  const bool sampled = check_mode == CheckMode::sampled;
  const bool by_position = o.sampled_positions > 0;
  const std::string sampled_count =
      std::to_string(by_position ? std::min(o.sampled_positions, o.seq) : std::int64_t(kSampledRowsPerRank));
  const std::string sampled_text =
      sampled_count + (by_position ? " positions of the sequence (the same at any P)" : " rows of each rank's results");
  const std::string sampled_against = sampled_count +
                                      (by_position ? " sampled positions of the sequence" : " sampled rows per rank") +
                                      " against float64";
  const bool is_ring = o.strategy.kind == engine::StrategyKind::ring;
  // Only the ring has the schedules without communication or without compute to compare with.
  const bool overlap = o.overlap && P > 1 && is_ring;
  const bool gpu = o.device == RunDevice::cuda;
  const std::string strategy = strategy_label(o.strategy);
  const std::string place =
      compute_place(o, threads) + (gpu ? ring.backend_name() : "") +
      (gpu ? std::string(", kernels ") + engine::cuda_kernels_name(cfg.cuda_kernels) +
                 " (asked: " + engine::kernel_request_name(o.kernels) + "), path " +
                 engine::cuda_path_name(cfg.cuda_path) + " (asked: " + engine::path_request_name(o.kernel_path) + ")"
           : "") +
      (o.deterministic ? ", deterministic backward" : "");
  const std::string mask_text = std::string(causal                      ? "causal"
                                            : o.mask == RFA_MASK_RANGES ? "mask " + o.mask_spec
                                                                        : "non-causal") +
                                (o.window > 0 ? ", window " + std::to_string(o.window) : "") +
                                (o.documents_spec.empty() ? "" : ", documents " + o.documents_spec) +
                                (o.sinks ? ", attention sinks" : "") +
                                (o.softcap > 0.0f ? ", scores soft-capped at " + number_text(o.softcap) : "");
  progress(me, "rfa_run: B=%lld S=%lld H=%lld/%lld d=%s %s %s %s, strategy %s, %s (ring order: %s), %s\n",
           (long long)o.batch, (long long)o.seq, (long long)o.heads, (long long)o.kv_heads, head_dims_label(o).c_str(),
           dtype_name(o.dtype), mask_text.c_str(), layout::layout_name(o.layout), strategy.c_str(),
           ranks_text(P).c_str(), order_policy, place.c_str());
  if (!o.plan.empty()) progress(me, "plan: %s\n", o.plan.c_str());
  progress(me, "ring order: %s\n", topology::order_by_host(setup.order).c_str());
  if (!gpu) warn_if_oversubscribed(me, threads);

  const std::unique_ptr<engine::AttentionStrategy>& attn = setup.engine;
  // Inside the agreement: a rank that cannot allocate its tensors fails every rank with its
  // message (RFA_ERROR_OUT_OF_MEMORY, the tensor and the bytes) instead of leaving them waiting.
  std::optional<Problem> problem;
  comm::check_everywhere(ring, [&] { problem.emplace(*attn); });
  Problem& lp = *problem;
  if (o.sinks) lp.use_sinks(run_sinks(o.heads), control);
  Passes<T, Problem> passes{*attn, lp};
  const int phases = 2 + (check ? 1 : 0) + (overlap ? 1 : 0);
  int phase = 0;

  // Untimed passes first: page faults of fresh buffers and MPI's first rendezvous stay out of
  // the figures.
  progress(me, "[%d/%d] warm-up: %d untimed forward+backward pass(es)\n", ++phase, phases, o.warmup);
  for (int w = 0; w < o.warmup; ++w) {
    passes.run(false);
    passes.run(true);
  }
  progress(me, "[%d/%d] timed: %d repetition(s) of forward+backward\n", ++phase, phases, o.repeat);
  PassSamples fwd, bwd;
  for (int r = 0; r < o.repeat; ++r) {
    // --release-workspace: each timed pass allocates its workspace afresh, as after
    // rfa_context_release_workspace.
    auto timed = [&](bool backward) {
      if (o.release_workspace) attn->release_workspace();
      passes.run(backward);
    };
    time_pass(
        control, *attn, [&] { timed(false); }, fwd);
    time_pass(
        control, *attn, [&] { timed(true); }, bwd);
    progress(me, "  repetition %d/%d: forward %.1f ms, backward %.1f ms (slowest rank)\n", r + 1, o.repeat,
             1e3 * fwd.slowest().back(), 1e3 * bwd.slowest().back());
  }

  CheckErrors err;
  if (check) {
    LocalProblem<T>& r = lp.results();  // in host memory
    if (sampled) {
      progress(me, "[%d/%d] check: %s against float64 attention for those rows\n", ++phase, phases,
               sampled_text.c_str());
      err = check_sampled_rows<T>(control, cfg, attn->local_positions(), r.out, r.lse, r.dq, r.dk, r.dv,
                                  SampledRows{o.sampled_positions}, r.sinks, r.dsinks);
    } else {
      progress(me, "[%d/%d] check: this rank's results against the single-rank fp32 kernels on the full sequence\n",
               ++phase, phases);
      err = check_against_single_rank<T>(control, cfg, attn->local_positions(), r.out, r.lse, r.dq, r.dk, r.dv, r.sinks,
                                         r.dsinks);
    }
  }
  // The other two schedules overwrite the results, so they run after the check.
  PassSamples fwd_compute, fwd_comm, bwd_compute, bwd_comm;
  if (overlap) {
    progress(me,
             "[%d/%d] overlap: %d repetition(s) each of the same schedule without communication and without "
             "compute\n",
             ++phase, phases, o.repeat);
    for (int r = 0; r < o.repeat; ++r) {
      time_pass(control, *attn, lp, RingMode::compute_only, false, fwd_compute);
      time_pass(control, *attn, lp, RingMode::comm_only, false, fwd_comm);
      time_pass(control, *attn, lp, RingMode::compute_only, true, bwd_compute);
      time_pass(control, *attn, lp, RingMode::comm_only, true, bwd_comm);
    }
  }

  // Rates count the scores the mask leaves visible (attention_work.hpp); FlashAttention's
  // convention, which ignores windows, is printed beside them under its name.
  const PassFlops fwd_flops = pass_flops(o, false), bwd_flops = pass_flops(o, true);
  const double tol = tolerance(o.dtype);
  // cuDNN asked for where every step is one it expresses (no documents, no soft cap, no mask
  // given as ranges, one head dim: those blocks run on rfa's kernels by design; nor the
  // deterministic backward) and declining some of the visible steps: they fell back to rfa's
  // kernels, which a check of cuDNN must not pass.
  const bool cudnn_pinned = gpu && cfg.cuda_kernels == engine::CudaKernels::cudnn;
  const bool cudnn_expresses_every_step =
      cfg.doc_bounds.empty() && cfg.softcap == 0.0f && !cfg.ranges && cfg.dv() == cfg.head_dim;
  auto all_ranks = [](const std::vector<double>& per_rank) {
    return static_cast<long long>(std::accumulate(per_rank.begin(), per_rank.end(), 0.0));
  };
  const long long fwd_visible = all_ranks(fwd.steps_computed), bwd_visible = all_ranks(bwd.steps_computed);
  const bool cudnn_declined =
      cudnn_pinned && cudnn_expresses_every_step &&
      (fwd.steps_on_cudnn < fwd_visible || (!o.deterministic && bwd.steps_on_cudnn < bwd_visible));
  if (me == 0 && cudnn_pinned)
    std::printf(
        "cuDNN computed %lld of the %lld visible forward steps and %lld of the %lld backward steps over all "
        "ranks%s\n",
        (long long)fwd.steps_on_cudnn, fwd_visible, (long long)bwd.steps_on_cudnn, bwd_visible,
        cudnn_declined ? ": it declined the others, which rfa's kernels computed (FAILED: every step here is "
                         "one it expresses)"
                       : "");
  const bool ok = !cudnn_declined && (!check || (err.out <= tol && err.lse <= 1e-3 && err.dq <= 2 * tol &&
                                                 err.dk <= 2 * tol && err.dv <= 2 * tol && err.dsinks <= 2 * tol));
  // The job's peak on the host: every rank's threads at the single-core peak rank 0 measures
  // for the products the kernels run on (bf16's hardware products where they are used).
  double peak = 0;
  if (me == 0 && !gpu) peak = host_job_peak(o, P, threads);

  if (me == 0) {
    std::printf(
        "\nper rank (median over %d repetition(s); rates: the job's visible-score FLOPs / P over the "
        "rank's time):\n",
        o.repeat);
    const double unit = gpu ? 1e-12 : 1e-9;
    const char* rate = gpu ? "TF/s" : "GF/s";
    // Host ranks also report the CPU seconds they computed for: their work, even where ranks
    // outnumber the cores and take turns (a device rank's CPU only queues kernels).
    std::printf("%4s %9s %9s %6s %-4s %6s %-4s %9s %6s%s\n", "pos", "fwd ms", "bwd ms", "fwd", rate, "bwd", rate,
                "wait ms", "steps", gpu ? "" : "  fwd cpu ms  bwd cpu ms");
    for (int k = 0; k < P; ++k) {
      std::vector<double> f, b, w, fc, bc;
      for (int r = 0; r < o.repeat; ++r) {
        f.push_back(fwd.total[r][k]);
        b.push_back(bwd.total[r][k]);
        w.push_back(fwd.wait[r][k] + bwd.wait[r][k]);
        fc.push_back(fwd.compute_cpu[r][k]);
        bc.push_back(bwd.compute_cpu[r][k]);
      }
      const double fm = median(f), bm = median(b);
      std::printf("%4d %9.1f %9.1f %11.1f %11.1f %9.1f %6d", k, 1e3 * fm, 1e3 * bm, fwd_flops.visible / P / fm * unit,
                  bwd_flops.visible / P / bm * unit, 1e3 * median(w), int(fwd.steps_computed[std::size_t(k)]));
      if (!gpu) std::printf(" %11.1f %11.1f", 1e3 * median(fc), 1e3 * median(bc));
      std::printf("\n");
    }
    const Spread f = spread_of(fwd.slowest()), b = spread_of(bwd.slowest());
    const char* job_rate = gpu ? "TFLOP/s" : "GFLOP/s";
    std::printf(
        "%s (slowest rank): forward %.1f ms (range %.1f-%.1f, %.1f %s), backward %.1f ms (range %.1f-%.1f, %.1f %s) "
        "over the %.0f visible scores per head and batch entry\n",
        strategy.c_str(), 1e3 * f.median, 1e3 * f.min, 1e3 * f.max, fwd_flops.visible / f.median * unit, job_rate,
        1e3 * b.median, 1e3 * b.min, 1e3 * b.max, bwd_flops.visible / b.median * unit, job_rate,
        visible_scores_over_batch(o) / double(o.batch));
    std::printf(
        "by FlashAttention's convention (4 B S^2 H d, halved when causal; windows ignored): forward %.1f %s, "
        "backward %.1f %s\n",
        fwd_flops.flash_convention / f.median * unit, job_rate, bwd_flops.flash_convention / b.median * unit, job_rate);
    if (peak > 0) {
      const double ff = fwd_flops.visible / f.median / peak, bf = bwd_flops.visible / b.median / peak;
      std::printf(
          "of the job's measured peak (%.1f GFLOP/s over %d rank(s) x %d thread(s)): forward %.1f%%, backward "
          "%.1f%%%s\n",
          peak * 1e-9, P, threads, 100 * ff, 100 * bf,
          ff > 1 || bf > 1 ? " (above the peak: the count or the peak is wrong)" : "");
    }
    if (!gpu && P > 1)
      std::printf(
          "work balance (the most compute CPU seconds of a rank over their mean; 1 is even): forward %.3f, "
          "backward %.3f\n",
          median(fwd.compute_balance()), median(bwd.compute_balance()));
    if (P == 1) {
      std::printf("hidden communication: none to hide (one rank, no ring exchange)\n");
    } else if (!is_ring) {
      std::printf(
          "hidden communication: not measured for %s (only the ring has schedules without communication "
          "or without compute to compare with); bytes sent per pass: forward %.2f MiB, backward %.2f MiB "
          "(all ranks)\n",
          strategy.c_str(), double(fwd.bytes_moved) / (1024.0 * 1024.0), double(bwd.bytes_moved) / (1024.0 * 1024.0));
    } else if (!overlap) {
      std::printf("hidden communication: not measured (--no-overlap)\n");
    } else {
      std::printf("hidden communication:\n");
      print_hidden("forward", fwd, fwd_compute, fwd_comm);
      print_hidden("backward", bwd, bwd_compute, bwd_comm);
    }
    if (check) {
      const std::string against =
          sampled ? sampled_against : std::string("single-rank fp32 kernels on the full sequence");
      const std::string sink_error = o.sinks ? "  dsinks " + scientific(err.dsinks) : std::string();
      std::printf(
          "max error vs %s: out %.2e  lse %.2e  dq %.2e  dk %.2e  dv %.2e%s  (tolerance %.0e, gradients %.0e): %s\n",
          against.c_str(), err.out, err.lse, err.dq, err.dk, err.dv, sink_error.c_str(), tol, 2 * tol,
          ok ? "PASS" : "FAIL");
    } else {
      std::printf("check skipped (--no-check)\n");
    }
  }

  if (!o.json.empty() && me == 0) {
    const char* layout = layout::layout_name(o.layout);
    const std::vector<double> hf = overlap ? hidden_samples(fwd, fwd_compute, fwd_comm) : std::vector<double>{};
    const std::vector<double> hb = overlap ? hidden_samples(bwd, bwd_compute, bwd_comm) : std::vector<double>{};
    const bool hf_ok = overlap && overlap_measurable(fwd, fwd_comm),
               hb_ok = overlap && overlap_measurable(bwd, bwd_comm);
    // The ring's cases keep their earlier names, so that older baselines still compare.
    const std::string prefix = is_ring ? "" : strategy + "/";
    std::vector<BenchCase> cases = {
        ring_case("main_job/fwd/" + prefix + layout, o, layout, fwd, fwd_flops, peak, hf_ok ? &hf : nullptr, strategy),
        ring_case("main_job/bwd/" + prefix + layout, o, layout, bwd, bwd_flops, peak, hb_ok ? &hb : nullptr, strategy)};
    if (check) {
      cases[0].counters["correct"] = err.out <= tol && err.lse <= 1e-3;
      cases[0].counters["max_error"] = std::max(err.out, err.lse);
      cases[1].counters["correct"] =
          err.dq <= 2 * tol && err.dk <= 2 * tol && err.dv <= 2 * tol && err.dsinks <= 2 * tol;
      cases[1].counters["max_error"] = std::max({err.dq, err.dk, err.dv, err.dsinks});
    }
    if (overlap) {
      cases[0].counters["comm_only_s"] = spread_of(fwd_comm.slowest()).median;
      cases[1].counters["comm_only_s"] = spread_of(bwd_comm.slowest()).median;
    }
    ContextFields context = ring_context("rfa_run", P, order_policy, o, threads, strategy);
    // Host and GPU runs of the same shape are different configurations for the comparator.
    set_field(context, "device", gpu ? "cuda" : "host");
    set_field(context, "cuda_kernels", gpu ? engine::cuda_kernels_name(cfg.cuda_kernels) : "none");
    set_field(context, "cuda_kernel_path", gpu ? engine::cuda_path_name(cfg.cuda_path) : "none");
    if (gpu) {
      cases[0].counters["steps_on_cudnn"] = double(fwd.steps_on_cudnn);
      cases[1].counters["steps_on_cudnn"] = double(bwd.steps_on_cudnn);
      cases[0].counters["steps_visible"] = double(fwd_visible);
      cases[1].counters["steps_visible"] = double(bwd_visible);
    }
    set_field(context, "deterministic", o.deterministic ? "1" : "0");
    set_field(context, "sinks", o.sinks ? "1" : "0");
    set_field(context, "communicator", ring.backend_name());
    write_results_json(o.json, context, cases);
    std::printf("results written to %s\n", o.json.c_str());
  }
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace perf
}  // namespace rfa

int main(int argc, char** argv) {
  return rfa::perf::run_mpi_program(argc, argv, "rfa_run", [](int world_rank, int args, char** argv_) {
    int P = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    rfa::perf::RunOptions opts;
    std::string note, refused;
    try {
      opts = rfa::perf::parse_run_options(args, argv_);
      if (opts.help) {
        if (world_rank == 0) std::printf("%s", rfa::perf::run_usage(argv_[0]).c_str());
        return 0;
      }
      note = rfa::perf::fit_default_seq(opts, P);
      if (!opts.auto_strategy) rfa::engine::validate_strategy(opts.strategy, rfa::perf::attention_config(opts), P);
    } catch (const rfa::Error& e) {
      refused = e.what();
    }
    // The ranks parsed the same argv, but what it names may differ between them (a --mask
    // ranges: file on a node's own disk, or not yet there): the lowest rank that refused it
    // speaks, and every rank stops, before any other communication.
    int first_refusal = refused.empty() ? P : world_rank;
    MPI_Allreduce(MPI_IN_PLACE, &first_refusal, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (first_refusal < P) {
      if (world_rank == first_refusal)
        std::fprintf(stderr, "rfa_run: error: %s%s\n", refused.c_str(),
                     first_refusal > 0 ? (" (on rank " + std::to_string(first_refusal) + ")").c_str() : "");
      return 2;
    }
    if (world_rank == 0 && !note.empty()) std::printf("note: %s\n", note.c_str());
    // The same setup as rfa_context_create: ring order, device check, communicator, CUDA
    // kernels, strategy (the model's plan with --strategy auto), engine. Every failure is
    // raised on every rank alike, so rank 0 speaks for all.
    rfa::setup::SetupRequest request;
    request.config = rfa::perf::attention_config(opts);
    request.strategy = opts.strategy;
    request.automatic_strategy = opts.auto_strategy;
    request.cuda_kernels = opts.kernels;
    request.cuda_path = opts.kernel_path;
    request.chosen_by = "--strategy";
    rfa::setup::AttentionSetup ring;
    std::unique_ptr<rfa::comm::Communicator> control;
    try {
      ring = rfa::setup::set_up_attention(MPI_COMM_WORLD, request);
      // The job's own host-memory collectives (timings, the check's gathers): the ring's
      // communicator on the host; a plain MPI one beside a device transport, which refuses them.
      if (opts.device == rfa::perf::RunDevice::cuda)
        control = rfa::comm::make_mpi_communicator(MPI_COMM_WORLD, ring.order.position);
    } catch (const rfa::Error& e) {
      if (world_rank == 0) std::fprintf(stderr, "rfa_run: error: %s\n", e.what());
      return 2;
    }
    opts.strategy = ring.strategy;
    opts.layout = ring.config.layout;
    if (opts.auto_strategy) opts.plan = ring.plan;
    rfa::comm::Communicator& checks = control ? *control : *ring.comm;
    return rfa::dispatch_dtype(opts.dtype, [&](auto tag) {
      using T = decltype(tag);
#if RFA_ENGINE_CUDA
      if (opts.device == rfa::perf::RunDevice::cuda)
        return rfa::perf::run<T, rfa::perf::DeviceProblem<T>>(ring, checks, opts);
#endif
      return rfa::perf::run<T, rfa::perf::LocalProblem<T>>(ring, checks, opts);
    });
  });
}
