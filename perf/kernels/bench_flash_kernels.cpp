// SPDX-License-Identifier: BSD-3-Clause
// Benchmark of the portable flash kernels on the host threads Kokkos gives (one with the
// Serial backend; OMP_NUM_THREADS with OpenMP).
//
// Prints, per (pass, dtype, mask): GFLOP/s over the scores the mask leaves visible
// (perf/common/attention_work.hpp; for a causal mask S(S+1)/2 per head), the fraction of
// the measured fp32 FMA peak of the cores used, and PyTorch on the same problem and thread count
// when torch is importable (measured in the same run). Google Benchmark flags apply
// (--benchmark_out=FILE --benchmark_out_format=json for the regression comparator,
// --benchmark_filter=...); the shape comes
// from --rfa_batch, --rfa_seq, --rfa_heads, --rfa_head_dim (defaults 1, 4096, 4, 128) and
// --rfa_value_head_dim (V's and the output's head dim where it differs, as MLA's 192 / 128), the
// time each benchmark runs from --rfa_min_time (seconds, default 1). The variants models use
// apply to every case: --rfa_kv_heads (grouped-query heads), --rfa_window (a sliding window),
// --rfa_softcap (soft-capped scores), --rfa_documents (packed documents, rfa_run's spec);
// --rfa_dtypes picks the dtypes (float32 and bfloat16 by default; float16 too). The peer runs the
// same problem on PyTorch's fastest CPU path for it (torch_cpu_peer.py says which, and the
// summary prints what ran). --rfa_rounds=N alternates
// the whole rfa run and the peer's N times and reports medians, so that a slow spell of a
// shared machine does not land on one side of the ratio only; --rfa_paired=N then measures each
// case again in N pairs of single calls (one rfa call, one call of a peer that stays up), the
// finest alternation there is: a slow spell of a few seconds touches both calls of a pair
// (--rfa_rounds=0 --rfa_paired=N: rfa's cases once, and PyTorch in the pairs only).
// --rfa_peer_layout=bshd gives the peer views of the same [B][S][H][d] memory rfa reads instead
// of its preferred contiguous [B][H][S][d] tensors (the default). RFA_PEER_PYTHON names the Python that has torch
// (default: python3 on PATH).
#include <benchmark/benchmark.h>
#include <Kokkos_Core.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "attention_work.hpp"
#include "command_line.hpp"
#include "core/error.hpp"
#include "cpu_peak.hpp"
#include "document_spec.hpp"
#include "kernels/bf16_products.hpp"
#include "kernels/flash_attention.hpp"
#include "peer_process.hpp"
#include "run_context.hpp"

namespace {

using namespace rfa;
using kernels::Tensor3;
using kernels::Tensor4;

/// The problem every case runs: its shape and the variant it computes.
struct Shape {
  std::int64_t batch = 1, seq = 4096, heads = 4, head_dim = 128;
  std::int64_t value_dim = 0;  ///< V's head dim where it differs from head_dim (0: head_dim)
  std::int64_t kv_heads = 0;   ///< K's and V's heads (grouped-query attention; 0: heads)
  std::int64_t window = 0;     ///< sliding window, q - k < window (0: none)
  double softcap = 0.0;        ///< soft cap of the scaled scores (0: none)
  std::string documents;       ///< packed documents, perf/common/document_spec.hpp's spec ("": one)
  perf::DocumentLists docs;    ///< the documents' boundaries, from `documents`
  std::int64_t dv() const { return value_dim != 0 ? value_dim : head_dim; }
  std::int64_t kvh() const { return kv_heads != 0 ? kv_heads : heads; }
  /// Q's heads, with K's and V's after a slash where they differ ("4", "4/2").
  std::string heads_label() const {
    return std::to_string(heads) + (kvh() != heads ? "/" + std::to_string(kvh()) : "");
  }
  /// The mask's and the scores' variant for the shape line and the JSON context, as rfa_run
  /// spells it (" window 512 documents random:8 softcap 30"; "" for plain attention).
  std::string variant() const { return perf::variant_label(window, documents, softcap); }
};
Shape g_shape;
std::vector<rfa_dtype_t> g_dtypes = {RFA_DTYPE_FLOAT32, RFA_DTYPE_BFLOAT16};  // --rfa_dtypes
double g_peak = 0.0;            // fp32 FMA peak of the cores the kernels run on
double g_bf16_tile_peak = 0.0;  // bf16 AMX tile peak of those cores (0: no tiles)
double g_bf16_dot_peak = 0.0;   // AVX512-BF16 dot-product peak of those cores (0: not used)
double g_min_time = 1.0;        // seconds per benchmark (--rfa_min_time; the suite's --quick mode shortens it)
int g_rounds = 1;               // rfa runs, each followed by a peer run (--rfa_rounds; 0: one rfa run, no peer run)
int g_paired = 0;               // pairs of calls (rfa's, the serving peer's) per case after the rounds (--rfa_paired)
std::string g_peer_layout = "bhsd";  // the memory the peer reads (--rfa_peer_layout)

struct Result {
  double rfa_gflops = 0.0;
  double peer_gflops = 0.0;
};
std::map<std::string, Result> g_results;                      // this round's; key: "fwd bf16 causal"
std::map<std::string, std::vector<Result>> g_rounds_results;  // every round's, in order

template <class T>
Tensor4<T> random_tensor(const char* name, std::int64_t a, std::int64_t b, std::int64_t c, std::int64_t d,
                         std::uint64_t seed) {
  Tensor4<T> t(std::string(name), a, b, c, d);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (std::size_t i = 0; i < t.size(); ++i) t.data()[i] = from_float<T>(dist(rng));
  return t;
}

std::string key(const char* pass, rfa_dtype_t dtype, bool causal) {
  return std::string(pass) + " " + dtype_name(dtype) + (causal ? " causal" : " full");
}

/// The kernels' parameters for the shape and variant asked for, with or without the causal mask.
/// The documents' boundaries live in g_shape, which outlives every call.
kernels::AttentionParams case_params(bool causal) {
  const Shape& s = g_shape;
  kernels::AttentionParams p = kernels::make_params(s.batch, s.seq, s.seq, s.heads, s.kvh(), s.head_dim,
                                                    causal ? RFA_MASK_CAUSAL : RFA_MASK_NONE);
  p.value_dim = s.value_dim;
  p.window = s.window;
  p.softcap = float(s.softcap);
  if (!s.docs.bounds.empty()) {
    p.doc_bounds = s.docs.bounds.data();
    p.doc_bound_count = std::int64_t(s.docs.bounds.size());
    p.doc_offsets = s.docs.offsets.empty() ? nullptr : s.docs.offsets.data();
  }
  return p;
}

/// FLOPs of one pass over the scores the mask, the window and each batch entry's documents leave
/// visible (perf/common/attention_work.hpp).
double case_flops(bool causal, bool backward) {
  const Shape& s = g_shape;
  const double visible = perf::visible_scores_over_batch(s.batch, !s.docs.offsets.empty(), [&](std::int64_t e) {
    return perf::MaskShape{s.seq, causal, s.window, s.docs.entry(e), {}};
  });
  return perf::visible_flops(1.0, double(s.heads), double(s.head_dim), double(s.dv()), visible, backward);
}

/// The peak a kernel of this dtype runs against: that of the products bf16 runs on for this
/// shape (kernels::host_bf16_products: AMX tiles or AVX512-BF16 dot products), the fp32 FMA peak
/// otherwise (fp16 is computed in fp32).
double peak_of(bool bf16) {
  if (!bf16) return g_peak;
  switch (kernels::host_bf16_products(case_params(false))) {
    case kernels::Bf16Products::amx_tiles: return g_bf16_tile_peak;
    case kernels::Bf16Products::avx512_dot: return g_bf16_dot_peak;
    default: return g_peak;
  }
}
template <class T>
double peak_for() {
  return peak_of(std::is_same<T, bf16_t>::value);
}

/// One case's inputs, outputs and workspaces on the shape asked for; run() is one kernel call.
/// Calls share the kernels' workspaces, as the ring's steps do (block_compute_host.hpp).
template <class T>
class KernelCase {
 public:
  KernelCase(bool backward, bool causal)
      : backward_(backward),
        causal_(causal),
        p_(case_params(causal)),
        q_(random_tensor<T>("q", g_shape.batch, g_shape.seq, g_shape.heads, g_shape.head_dim, 1)),
        k_(random_tensor<T>("k", g_shape.batch, g_shape.seq, g_shape.kvh(), g_shape.head_dim, 2)),
        v_(random_tensor<T>("v", g_shape.batch, g_shape.seq, g_shape.kvh(), g_shape.dv(), 3)),
        dout_(random_tensor<T>("dout", g_shape.batch, g_shape.seq, g_shape.heads, g_shape.dv(), 4)),
        out_("out", g_shape.batch, g_shape.seq, g_shape.heads, g_shape.dv()),
        lse_("lse", g_shape.batch, g_shape.heads, g_shape.seq),
        dq_("dq", g_shape.batch, g_shape.seq, g_shape.heads, g_shape.head_dim),
        dk_("dk", g_shape.batch, g_shape.seq, g_shape.kvh(), g_shape.head_dim),
        dv_("dv", g_shape.batch, g_shape.seq, g_shape.kvh(), g_shape.dv()) {
    forward();  // the backward reads its output and log-sum-exp
  }

  void run() {
    if (backward_) {
      kernels::flash_backward<T>(p_, q_, k_, v_, out_, dout_, lse_, dq_, dk_, dv_, &backward_workspace_);
    } else {
      forward();
    }
  }

  double flops() const { return case_flops(causal_, backward_); }
  /// The tensors one pass reads and writes once (q, k, v, out, lse; the backward adds dout and
  /// the three gradients), a lower bound on its memory traffic.
  double bytes_moved() const {
    const double qk = double(q_.size() + k_.size()), vo = double(v_.size() + out_.size());
    const double elements = backward_ ? 2.0 * (qk + vo) : qk + vo;
    return elements * sizeof(T) + double(lse_.size()) * sizeof(float);
  }

 private:
  void forward() { kernels::flash_forward<T, T>(p_, q_, k_, v_, out_, lse_, kernels::ProgressHook(), &workspace_); }

  bool backward_, causal_;
  kernels::AttentionParams p_;
  Tensor4<T> q_, k_, v_, dout_, out_;
  Tensor3<float> lse_;
  Tensor4<T> dq_, dk_, dv_;
  kernels::ForwardWorkspace workspace_;
  kernels::BackwardWorkspace backward_workspace_;
};

template <class T>
void bench_attention(benchmark::State& state, bool backward, bool causal) {
  KernelCase<T> kernel_case(backward, causal);
  for (auto _ : state) kernel_case.run();
  const double flops = kernel_case.flops();
  const double iterations = double(state.iterations());
  state.counters["GFLOP/s"] = benchmark::Counter(flops * 1e-9 * iterations, benchmark::Counter::kIsRate);
  // perf/'s figures of merit, by the names every benchmark there uses (perf/common/result_json.hpp).
  state.counters["tflops"] = benchmark::Counter(flops * 1e-12 * iterations, benchmark::Counter::kIsRate);
  state.counters["peak_fraction"] = benchmark::Counter(flops / peak_for<T>() * iterations, benchmark::Counter::kIsRate);
  state.counters["bytes_moved"] = kernel_case.bytes_moved();
  state.SetLabel(std::string("suite=kernels dtype=") + dtype_name(dtype_of<T>::value));
}

/// Keeps the last measured GFLOP/s of each benchmark for the summary table.
class SummaryReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    std::vector<Run> annotated = runs;
    for (Run& r : annotated) {
      // With --benchmark_repetitions the median stands for the case (it is reported last).
      if (r.run_type == Run::RT_Aggregate && r.aggregate_name != "median") continue;
      auto it = r.counters.find("GFLOP/s");
      if (it == r.counters.end()) continue;
      g_results[r.benchmark_name().substr(0, r.benchmark_name().find('/'))].rfa_gflops = it->second;
    }
    ConsoleReporter::ReportRuns(annotated);
  }
};

/// Joins numbers with commas.
std::string comma_list(const std::vector<std::int64_t>& values) {
  std::string out;
  for (std::int64_t v : values) out += (out.empty() ? "" : ",") + std::to_string(v);
  return out;
}

/// The peer script's arguments for this run's dtypes and variant: the documents as the
/// boundaries they resolved to (the peer builds its mask from those, whatever the spec).
std::string peer_variant_arguments() {
  const Shape& s = g_shape;
  std::string dtypes;
  for (rfa_dtype_t dt : g_dtypes) dtypes += (dtypes.empty() ? "" : ",") + std::string(dtype_name(dt));
  std::string a = " --dtypes " + dtypes;
  if (s.kvh() != s.heads) a += " --kv-heads " + std::to_string(s.kvh());
  if (s.window > 0) a += " --window " + std::to_string(s.window);
  if (s.softcap > 0) {
    // The cap the kernels take, to the last bit: a float in 9 significant digits.
    char cap[32];
    std::snprintf(cap, sizeof cap, "%.9g", double(float(s.softcap)));
    a += std::string(" --softcap ") + cap;
  }
  if (!s.docs.bounds.empty()) {
    a += " --doc-bounds " + comma_list(s.docs.bounds);
    if (!s.docs.offsets.empty()) a += " --doc-offsets " + comma_list(s.docs.offsets);
  }
  return a;
}

/// The command that starts the PyTorch peer script on this run's shape, threads, layout and
/// variant, with `extra` arguments.
std::string peer_command(const std::string& extra) {
  const char* python = std::getenv("RFA_PEER_PYTHON");
  return std::string(python && *python ? python : "python3") + " " + RFA_TORCH_PEER_SCRIPT + " --batch " +
         std::to_string(g_shape.batch) + " --seq " + std::to_string(g_shape.seq) + " --heads " +
         std::to_string(g_shape.heads) + " --head-dim " + std::to_string(g_shape.head_dim) +
         (g_shape.value_dim != 0 ? " --value-head-dim " + std::to_string(g_shape.value_dim) : "") + " --threads " +
         std::to_string(Kokkos::DefaultHostExecutionSpace().concurrency()) + " --layout " + g_peer_layout +
         peer_variant_arguments() + extra + " 2>/dev/null";
}

/// The dtype named `name` (dtype_name's spelling), if it is one.
std::optional<rfa_dtype_t> dtype_named(const std::string& name) {
  for (rfa_dtype_t dt : {RFA_DTYPE_FLOAT32, RFA_DTYPE_BFLOAT16, RFA_DTYPE_FLOAT16})
    if (name == dtype_name(dt)) return dt;
  return std::nullopt;
}

/// What PyTorch ran, as the peer names it ("forward: FlexAttention compiled"), with the cases
/// it ran for.
std::map<std::string, std::set<std::string>> g_peer_calls;

/// Notes that the peer ran `ran` for the case named `case_name` ("fwd float32 causal").
void record_peer_call(const std::string& case_name, const std::string& ran) {
  if (ran.empty()) return;
  g_peer_calls[(case_name.rfind("fwd", 0) == 0 ? "forward: " : "backward: ") + ran].insert(case_name);
}

/// What PyTorch ran, under a table: a line per pass where one call served all its cases, else a
/// line per call with the cases it served (a FlexAttention that fell back for one dtype, say).
void print_peer_calls() {
  for (const char* pass : {"forward: ", "backward: "}) {
    int calls = 0;
    for (const auto& entry : g_peer_calls) calls += entry.first.rfind(pass, 0) == 0;
    for (const auto& [call, cases] : g_peer_calls) {
      if (call.rfind(pass, 0) != 0) continue;
      if (calls == 1) {
        std::printf("(torch's %s)\n", call.c_str());
        continue;
      }
      std::string names;
      for (const std::string& c : cases) names += (names.empty() ? "" : ", ") + c;
      std::printf("(torch's %s, for %s)\n", call.c_str(), names.c_str());
    }
  }
}

/// The string value of `field` in one of the peer's JSON lines ("" where it has none).
std::string json_string_field(const std::string& line, const std::string& field) {
  const std::string opening = "\"" + field + "\": \"";
  const std::size_t at = line.find(opening);
  if (at == std::string::npos) return "";
  const std::size_t begin = at + opening.size(), end = line.find('"', begin);
  return end == std::string::npos ? "" : line.substr(begin, end - begin);
}

/// Runs the PyTorch peer script once; fills peer_gflops of the matching entries.
void measure_peer() {
  perf::PeerProcess peer(peer_command(""));
  while (const auto line = peer.read_line()) {
    char dtype[32] = {0}, causal[8] = {0};
    double fwd_ms = 0, bwd_ms = 0;
    if (std::sscanf(line->c_str(), "{\"dtype\": \"%31[^\"]\", \"causal\": %7[a-z], \"fwd_ms\": %lf, \"bwd_ms\": %lf",
                    dtype, causal, &fwd_ms, &bwd_ms) != 4)
      continue;
    const bool is_causal = std::string(causal) == "true";
    const auto dt = dtype_named(dtype);
    if (!dt) continue;
    const double ffwd = case_flops(is_causal, false), fbwd = case_flops(is_causal, true);
    if (fwd_ms > 0) g_results[key("fwd", *dt, is_causal)].peer_gflops = ffwd / (fwd_ms * 1e-3) * 1e-9;
    if (bwd_ms > 0) g_results[key("bwd", *dt, is_causal)].peer_gflops = fbwd / (bwd_ms * 1e-3) * 1e-9;
    for (const char* pass : {"fwd", "bwd"})
      record_peer_call(key(pass, *dt, is_causal), json_string_field(*line, std::string(pass) + "_peer"));
  }
}

bool parse_shape_flag(const std::string& arg) {
  // Each shape flag, where it goes and its least value (a value head dim of 0: the head dim).
  struct ShapeFlag {
    const char* prefix;
    std::int64_t* value;
    std::int64_t least;
  };
  const ShapeFlag flags[] = {{"--rfa_batch=", &g_shape.batch, 1},
                             {"--rfa_seq=", &g_shape.seq, 1},
                             {"--rfa_heads=", &g_shape.heads, 1},
                             {"--rfa_head_dim=", &g_shape.head_dim, 1},
                             {"--rfa_value_head_dim=", &g_shape.value_dim, 0},
                             {"--rfa_kv_heads=", &g_shape.kv_heads, 1},
                             {"--rfa_window=", &g_shape.window, 0}};
  for (const ShapeFlag& f : flags) {
    const std::string prefix = f.prefix;
    if (arg.rfind(prefix, 0) == 0) {
      *f.value = perf::whole_number(prefix.substr(0, prefix.size() - 1), arg.substr(prefix.size()), f.least);
      return true;
    }
  }
  const std::string softcap = "--rfa_softcap=";
  if (arg.rfind(softcap, 0) == 0) {
    const std::string text = arg.substr(softcap.size());
    g_shape.softcap = perf::real_number("--rfa_softcap", text, 0.0);  // 0: no cap
    // The kernels take the cap as a float: one that rounds to 0 or past float's range is refused.
    const float cap = float(g_shape.softcap);
    if (g_shape.softcap != 0.0 && !(cap > 0.0f && std::isfinite(cap)))
      throw perf::OptionError("--rfa_softcap expects 0 (no cap) or a positive number within float's range, got '" +
                              text + "'");
    return true;
  }
  const std::string documents = "--rfa_documents=";
  if (arg.rfind(documents, 0) == 0) {
    g_shape.documents = arg.substr(documents.size());  // resolved once the shape is known
    if (g_shape.documents.find_first_not_of('/') == std::string::npos)
      throw perf::OptionError("--rfa_documents expects a spec that cuts the sequence, got '" + g_shape.documents +
                              "' (leave the flag out for one document)");
    return true;
  }
  const std::string dtypes = "--rfa_dtypes=";
  if (arg.rfind(dtypes, 0) == 0) {
    const std::string list = arg.substr(dtypes.size());
    g_dtypes.clear();
    std::stringstream in(list);
    for (std::string item; std::getline(in, item, ',');) {
      const auto dt = dtype_named(item);
      if (!dt || std::find(g_dtypes.begin(), g_dtypes.end(), *dt) != g_dtypes.end() || list.back() == ',')
        throw perf::OptionError(
            "--rfa_dtypes expects distinct dtypes among float32, bfloat16 and float16 separated "
            "by commas, got '" +
            list + "'");
      g_dtypes.push_back(*dt);
    }
    if (g_dtypes.empty()) throw perf::OptionError("--rfa_dtypes expects at least one dtype, got ''");
    return true;
  }
  const std::string min_time = "--rfa_min_time=";
  if (arg.rfind(min_time, 0) == 0) {
    // Google Benchmark refuses a minimum time of 0: at least a millisecond.
    g_min_time = perf::real_number("--rfa_min_time", arg.substr(min_time.size()), 1e-3);
    return true;
  }
  const std::string rounds = "--rfa_rounds=";
  if (arg.rfind(rounds, 0) == 0) {
    g_rounds = perf::whole_int("--rfa_rounds", arg.substr(rounds.size()), 0);
    return true;
  }
  const std::string paired = "--rfa_paired=";
  if (arg.rfind(paired, 0) == 0) {
    g_paired = perf::whole_int("--rfa_paired", arg.substr(paired.size()), 0);  // 0: no pairs
    return true;
  }
  const std::string peer_layout = "--rfa_peer_layout=";
  if (arg.rfind(peer_layout, 0) == 0) {
    g_peer_layout = arg.substr(peer_layout.size());
    if (g_peer_layout != "bhsd" && g_peer_layout != "bshd") {
      std::fprintf(stderr, "rfa_kernel_bench: --rfa_peer_layout must be bhsd or bshd, not '%s'\n",
                   g_peer_layout.c_str());
      std::exit(2);
    }
    return true;
  }
  return false;
}

/// The q-quantile of x, interpolated linearly between order statistics (q = 0.5: the median).
double quantile(std::vector<double> x, double q) {
  if (x.empty()) return 0.0;
  std::sort(x.begin(), x.end());
  const double at = q * double(x.size() - 1);
  const std::size_t below = std::size_t(at);
  const double above_weight = at - double(below);
  return below + 1 < x.size() ? x[below] * (1.0 - above_weight) + x[below + 1] * above_weight : x[below];
}
double median(const std::vector<double>& x) { return quantile(x, 0.5); }

/// The summary table: one round's figures, or with several rounds the medians of rfa's and the
/// peer's figures and of the per-round ratios (each round's rfa against the same round's peer),
/// with the ratios' range.
void print_summary() {
  const bool several = g_rounds > 1;
  if (several) std::printf("\nmedians of %d rounds (each: every rfa case, then the peer's)\n", g_rounds);
  std::printf("\n%-22s %10s %8s %14s %10s%s\n", "kernel", "GFLOP/s", "of peak", "torch GFLOP/s", "rfa/torch",
              several ? "  ratio range" : "");
  bool any_peer = false;
  for (const auto& [name, rounds] : g_rounds_results) {
    std::vector<double> rfa, peer, ratio;
    for (const Result& r : rounds) {
      if (r.rfa_gflops > 0) rfa.push_back(r.rfa_gflops);
      if (r.peer_gflops > 0) peer.push_back(r.peer_gflops);
      if (r.rfa_gflops > 0 && r.peer_gflops > 0) ratio.push_back(r.rfa_gflops / r.peer_gflops);
    }
    if (rfa.empty()) continue;
    const double peak = peak_of(name.find("bfloat16") != std::string::npos);
    std::printf("%-22s %10.1f %7.1f%%", name.c_str(), median(rfa), 100 * median(rfa) / (peak * 1e-9));
    if (ratio.empty()) {
      std::printf(" %14s %10s\n", "n/a", "n/a");
      continue;
    }
    any_peer = true;
    std::printf(" %14.1f %10.2f", median(peer), median(ratio));
    if (several)
      std::printf("  %.2f-%.2f", *std::min_element(ratio.begin(), ratio.end()),
                  *std::max_element(ratio.begin(), ratio.end()));
    std::printf("\n");
  }
  if (g_rounds == 0)
    std::printf("(--rfa_rounds=0: PyTorch measured in paired calls only)\n");
  else if (!any_peer)
    std::printf("(no PyTorch peer: torch is not importable; set RFA_PEER_PYTHON to a Python that has it)\n");
  else
    std::printf("(torch read %s)\n", g_peer_layout == "bshd" ? "transposed views of [B][S][H][d] tensors, as rfa does"
                                                             : "contiguous [B][H][S][d] tensors, its preferred layout");
  print_peer_calls();
}

/// One case measured in pairs of calls (--rfa_paired): each pair one rfa call and one call of
/// the serving peer, back to back.
struct PairedCase {
  std::string name;
  double flops = 0.0;
  double peak = 0.0;  // of the cores the kernel ran on, for its dtype (peak_for)
  std::vector<double> rfa_ms, peer_ms;
};
std::vector<PairedCase> g_paired_results;
/// Each registered case's paired measurement, by the case's name (register_dtype).
std::map<std::string, std::function<bool(perf::PeerProcess&)>> g_paired_measures;

/// The serving peer's time for `request` in milliseconds, or a negative number once it has
/// failed (the reason printed).
double peer_call_ms(perf::PeerProcess& peer, const std::string& request) {
  const auto answer = peer.ask(request);
  if (!answer) {
    std::fprintf(stderr, "rfa_kernel_bench: the peer stopped answering (request '%s')\n", request.c_str());
    return -1.0;
  }
  char* end = nullptr;
  const double ms = std::strtod(answer->c_str(), &end);
  if (end == answer->c_str() || *end != '\0' || !(ms > 0.0)) {
    std::fprintf(stderr, "rfa_kernel_bench: the peer answered '%s' to '%s'\n", answer->c_str(), request.c_str());
    return -1.0;
  }
  return ms;
}

/// One case's pairs of calls; false where the peer failed (the reason printed).
template <class T>
bool measure_paired(perf::PeerProcess& peer, const std::string& name, bool backward, bool causal) {
  KernelCase<T> kernel_case(backward, causal);
  PairedCase result{name, kernel_case.flops(), peak_for<T>(), {}, {}};
  const auto rfa_call_ms = [&kernel_case] {
    const auto start = std::chrono::steady_clock::now();
    kernel_case.run();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  };
  rfa_call_ms();                                     // warm-up, as the peer's next call is
  if (peer_call_ms(peer, name) < 0.0) return false;  // (the request is the case's name)
  for (int i = 0; i < g_paired; ++i) {
    // Who goes first alternates, so that neither side always follows the other's cache state.
    double rfa_ms = 0.0, peer_ms = 0.0;
    if (i % 2 == 0) {
      rfa_ms = rfa_call_ms();
      peer_ms = peer_call_ms(peer, name);
    } else {
      peer_ms = peer_call_ms(peer, name);
      rfa_ms = rfa_call_ms();
    }
    if (peer_ms < 0.0) return false;
    result.rfa_ms.push_back(rfa_ms);
    result.peer_ms.push_back(peer_ms);
  }
  g_paired_results.push_back(std::move(result));
  return true;
}

/// The paired table: medians of each side's call times as GFLOP/s, and the median, middle half
/// and range of the per-pair ratios.
void print_paired_summary(const std::string& peer_version) {
  std::printf("\npaired calls: %d per case, one rfa call and one PyTorch call back to back (%s)\n\n", g_paired,
              peer_version.c_str());
  std::printf("%-22s %10s %8s %14s %10s %14s %14s\n", "kernel", "GFLOP/s", "of peak", "torch GFLOP/s", "rfa/torch",
              "middle half", "range");
  for (const PairedCase& c : g_paired_results) {
    std::vector<double> ratio;
    for (std::size_t i = 0; i < c.rfa_ms.size(); ++i) ratio.push_back(c.peer_ms[i] / c.rfa_ms[i]);
    const double rfa_gflops = c.flops / (median(c.rfa_ms) * 1e-3) * 1e-9;
    const double peer_gflops = c.flops / (median(c.peer_ms) * 1e-3) * 1e-9;
    char middle[32], range[32];
    std::snprintf(middle, sizeof middle, "%.2f-%.2f", quantile(ratio, 0.25), quantile(ratio, 0.75));
    std::snprintf(range, sizeof range, "%.2f-%.2f", *std::min_element(ratio.begin(), ratio.end()),
                  *std::max_element(ratio.begin(), ratio.end()));
    std::printf("%-22s %10.1f %7.1f%% %14.1f %10.2f %14s %14s\n", c.name.c_str(), rfa_gflops,
                100 * rfa_gflops / (c.peak * 1e-9), peer_gflops, median(ratio), middle, range);
  }
  print_peer_calls();
}

/// --rfa_paired=N: the cases the filter selected, each in N pairs of calls against a peer that
/// stays up (torch_cpu_peer.py --serve).
void run_paired() {
  perf::PeerProcess peer(peer_command(" --serve"));
  const auto greeting = peer.read_line();
  if (!greeting || greeting->rfind("ready ", 0) != 0) {
    std::printf(
        "\n(paired calls: no PyTorch peer: torch is not importable; set RFA_PEER_PYTHON to a Python that has it)\n");
    return;
  }
  for (const auto& [name, rounds] : g_rounds_results) {
    // The cases the filter selected: rfa ran them (the one-shot peer measured every case).
    if (std::none_of(rounds.begin(), rounds.end(), [](const Result& r) { return r.rfa_gflops > 0; })) continue;
    std::printf("paired calls: %s\n", name.c_str());
    std::fflush(stdout);
    // What the peer ran for the case ("name fwd float32 causal": torch_cpu_peer.py --serve).
    if (g_paired_measures.at(name)(peer))
      if (const auto ran = peer.ask("name " + name)) record_peer_call(name, *ran);
  }
  print_paired_summary(greeting->substr(6));
}

template <class T>
void register_dtype() {
  const rfa_dtype_t dt = dtype_of<T>::value;
  for (bool backward : {false, true}) {
    for (bool causal : {false, true}) {
      const std::string name = key(backward ? "bwd" : "fwd", dt, causal);
      benchmark::RegisterBenchmark(
          name.c_str(), [backward, causal](benchmark::State& st) { bench_attention<T>(st, backward, causal); })
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime()
          ->MinTime(g_min_time);
      g_paired_measures[name] = [name, backward, causal](perf::PeerProcess& peer) {
        return measure_paired<T>(peer, name, backward, causal);
      };
    }
  }
}

}  // namespace

const char* kUsage = R"(usage: rfa_kernel_bench [--rfa_batch=N] [--rfa_seq=N] [--rfa_heads=N] [--rfa_head_dim=N]
                        [--rfa_value_head_dim=N] [--rfa_kv_heads=N] [--rfa_window=N] [--rfa_softcap=C]
                        [--rfa_documents=SPEC] [--rfa_dtypes=LIST] [--rfa_min_time=SECONDS]
                        [--rfa_rounds=N] [--rfa_paired=N] [--rfa_peer_layout=bhsd|bshd]
                        [Google Benchmark flags] [--kokkos-help]

The portable flash kernels on the host threads Kokkos gives (fp32 and bf16 unless --rfa_dtypes,
forward and backward, causal and not): GFLOP/s over the scores the mask leaves visible, the
fraction of the measured peak of the cores used (one core's, times the host threads: fp32 FMA,
or the bf16 products the bf16 kernels run on), and PyTorch on the same problem and as many threads when RFA_PEER_PYTHON
(default python3) imports torch. Shape defaults: B=1, S=4096, H=4, d=128; --rfa_value_head_dim:
V's and the output's head dim where it differs from d (MLA: --rfa_head_dim=192
--rfa_value_head_dim=128; FLOPs then 2 (d + dv) per visible score forward, 6 d + 4 dv backward);
--rfa_min_time: seconds per case (1).
The variant, for every case (what PyTorch runs, forward / backward, in brackets):
--rfa_kv_heads=N: K's and V's heads, dividing H (grouped-query attention; SDPA's flash kernel
with enable_gqa).
--rfa_window=N: a sliding window, key k visible to query q where q - k < N (0: none;
FlexAttention compiled with a block mask / SDPA's flash kernel with a boolean mask).
--rfa_softcap=C: scores soft-capped, C tanh(s / C) (0: none; FlexAttention compiled with a
score_mod / eager math through autograd).
--rfa_documents=SPEC: packed documents, rfa_run's --documents spec: "L1,L2,..." (lengths, then
one document of what is left), "random:N", or one list per batch entry separated by '/'
(PyTorch: as for a window).
--rfa_dtypes=LIST: the dtypes, of float32, bfloat16 and float16 (default float32,bfloat16).
--rfa_rounds=N: N rounds of (every rfa case, then the peer's), medians reported (default 1; a
JSON output file holds the last round). 0: rfa's cases once and no peer round (with --rfa_paired,
whose pairs then give the only PyTorch figures).
--rfa_paired=N: then each case again in N pairs of single calls, one rfa call and one PyTorch call
back to back (the peer stays up between calls; who goes first alternates): the median of the
per-pair ratios, their middle half and range (not in the JSON output file).
--rfa_peer_layout: the memory PyTorch reads: bhsd (default), contiguous [B][H][S][d] tensors, its
preferred layout; bshd, transposed views of [B][S][H][d] tensors, the memory rfa's kernels read.
perf/'s result format: --benchmark_repetitions=10 --benchmark_out=FILE --benchmark_out_format=json.

Google Benchmark's flags:
)";

int main(int argc, char** argv) {
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    // Our help, then Google Benchmark's (which exits 0); Kokkos would print its banner and
    // help for a plain --help, so it never sees one (--kokkos-help asks for that).
    if (i > 0 && (std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h")) {
      std::printf("%s", kUsage);
      std::fflush(stdout);
      static char help[] = "--help";
      char* gb_argv[] = {argv[0], help, nullptr};
      int gb_argc = 2;
      benchmark::Initialize(&gb_argc, gb_argv);
      return 0;
    }
    try {
      if (i == 0 || !parse_shape_flag(argv[i])) rest.push_back(argv[i]);
    } catch (const perf::OptionError& e) {
      std::fprintf(stderr, "rfa_kernel_bench: %s\n", e.what());
      return 2;
    }
  }
  // The variant's checks, before anything runs: grouped heads that divide the query heads, and
  // documents that fit the sequence and the batch.
  if (g_shape.heads % g_shape.kvh() != 0) {
    std::fprintf(stderr, "rfa_kernel_bench: --rfa_kv_heads=%lld does not divide --rfa_heads=%lld\n",
                 (long long)g_shape.kvh(), (long long)g_shape.heads);
    return 2;
  }
  try {
    g_shape.docs = perf::parse_documents(g_shape.documents, g_shape.seq, g_shape.batch, "--rfa_documents");
  } catch (const Error& e) {
    std::fprintf(stderr, "rfa_kernel_bench: %s\n", e.what());
    return 2;
  }
  int rest_argc = int(rest.size());
  Kokkos::initialize(rest_argc, rest.data());
  {
    benchmark::Initialize(&rest_argc, rest.data());
    // What neither this program, Kokkos nor Google Benchmark took is a mistyped flag (an
    // --rfa_ flag misspelled would otherwise run the default shape without a word).
    if (benchmark::ReportUnrecognizedArguments(rest_argc, rest.data())) {
      std::fprintf(stderr, "rfa_kernel_bench: unknown option (--help lists them)\n");
      benchmark::Shutdown();
      Kokkos::finalize();
      return 2;
    }
    // The peak of the cores the kernels run on: one core's measured peak times the host
    // threads (Kokkos OpenMP with OMP_NUM_THREADS=2, say); the peer gets as many threads.
    const int threads = Kokkos::DefaultHostExecutionSpace().concurrency();
    const double core_peak = perf::measure_fp32_fma_peak();
    g_peak = core_peak * threads;
    const std::string dims =
        std::to_string(g_shape.head_dim) + (g_shape.value_dim != 0 ? "/" + std::to_string(g_shape.value_dim) : "");
    // The variant is part of the shape: the comparator refuses to set a windowed run beside a
    // plain one.
    const std::string shape = "B=" + std::to_string(g_shape.batch) + " S=" + std::to_string(g_shape.seq) +
                              " H=" + g_shape.heads_label() + " d=" + dims + g_shape.variant();
    std::printf("shape: %s, %d host thread(s)\n", shape.c_str(), threads);
    std::printf("measured fp32 FMA peak of one core: %.1f GFLOP/s (x %d thread(s) = %.1f)\n", core_peak * 1e-9, threads,
                g_peak * 1e-9);
    benchmark::AddCustomContext("fp32_fma_peak_gflops", std::to_string(g_peak * 1e-9));
    g_bf16_tile_peak = perf::measure_bf16_tile_peak() * threads;
    if (g_bf16_tile_peak > 0) {
      std::printf(
          "measured bf16 AMX tile peak of one core: %.1f GFLOP/s (bf16 kernels on the tiles: \"of peak\" is of this)\n",
          g_bf16_tile_peak * 1e-9 / threads);
      benchmark::AddCustomContext("bf16_tile_peak_gflops", std::to_string(g_bf16_tile_peak * 1e-9));
    }
    g_bf16_dot_peak = g_bf16_tile_peak > 0 ? 0.0 : perf::measure_bf16_dot_peak() * threads;
    if (g_bf16_dot_peak > 0) {
      std::printf(
          "measured AVX512-BF16 dot-product peak of one core: %.1f GFLOP/s (bf16 kernels run on "
          "them: \"of peak\" is of this)\n",
          g_bf16_dot_peak * 1e-9 / threads);
      benchmark::AddCustomContext("bf16_dot_peak_gflops", std::to_string(g_bf16_dot_peak * 1e-9));
    }
    // The provenance every perf/ result carries; Google Benchmark writes date, host, executable
    // and CPU count itself.
    for (const auto& [k, v] : perf::collect_run_context("rfa_kernel_bench")) {
      if (k != "date" && k != "host_name" && k != "executable" && k != "num_cpus") benchmark::AddCustomContext(k, v);
    }
    benchmark::AddCustomContext("threads_per_rank", std::to_string(Kokkos::DefaultHostExecutionSpace().concurrency()));
    benchmark::AddCustomContext("suite", "kernels");
    benchmark::AddCustomContext("strategy", "none (one rank)");
    benchmark::AddCustomContext("ranks", "1");
    benchmark::AddCustomContext("ring_order", "none");
    benchmark::AddCustomContext("peer_layout", g_peer_layout);
    std::string dtypes;
    for (rfa_dtype_t dt : g_dtypes)
      dtypes += std::string(dtypes.empty() ? "" : " ") + (dt == RFA_DTYPE_FLOAT32    ? "fp32"
                                                          : dt == RFA_DTYPE_BFLOAT16 ? "bf16"
                                                                                     : "fp16");
    benchmark::AddCustomContext("dtype", dtypes);
    benchmark::AddCustomContext("shape", shape);
    for (rfa_dtype_t dt : g_dtypes) dispatch_dtype(dt, [](auto t) { register_dtype<decltype(t)>(); });
    SummaryReporter reporter;
    // --rfa_rounds=0: rfa's figures once (the cases the filter selects, for --rfa_paired), without
    // the one-shot peer, whose every case would cost a paired run minutes (PyTorch's bf16
    // backward takes seconds a call on CPUs without bf16 instructions).
    for (int round = 0; round < std::max(1, g_rounds); ++round) {
      if (g_rounds > 1) std::printf("round %d of %d\n", round + 1, g_rounds);
      g_results.clear();
      benchmark::RunSpecifiedBenchmarks(&reporter);
      if (g_rounds > 0) measure_peer();
      for (const auto& [name, r] : g_results) g_rounds_results[name].push_back(r);
    }
    print_summary();
    if (g_paired > 0) run_paired();
    benchmark::Shutdown();
  }
  Kokkos::finalize();
  return 0;
}
