// SPDX-License-Identifier: BSD-3-Clause
// rfa_plan: the performance model's plan for machines we do not have (docs/performance-model.md).
// For each sequence length and rank count it prints the plan the model picks (strategy, Ulysses
// degree, layout), its predicted forward and backward time and the per-device throughput, beside
// the plain zigzag ring's; --json writes the same in perf/'s result format, which perf/plot draws
// (plan.png). No MPI: the model runs on one process.
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "attention_work.hpp"
#include "command_line.hpp"
#include "core/error.hpp"
#include "model/plan.hpp"
#include "result_json.hpp"

namespace {

using rfa::model::MachineModel;
using rfa::perf::whole_int;
using rfa::perf::whole_number;
using rfa::perf::whole_numbers;

constexpr const char* kUsage = R"(usage: rfa_plan [options]
Prints the performance model's plan (strategy, Ulysses degree, layout) and predicted per-device
throughput for each sequence length and rank count, on a described machine.

Machine (a preset, then any figure overridden):
  --machine NAME       h100-cluster (default): 8 GPUs per node, NVLink 450 GB/s and 3 us inside
                       a node, 400 Gb/s (50 GB/s) and 5 us between nodes, rfa's CUDA kernels at
                       275 / 150 TFLOP/s forward / backward (perf/RESULTS.md, H100);
                       cpu-cluster: 2 ranks (sockets) per node, shared memory 20 GB/s and 1 us,
                       200 Gb/s (25 GB/s) and 2 us between nodes, 64 cores per rank at the
                       measured per-core rate of rfa's fp32 kernels (5.9 / 6.0 TFLOP/s)
  --ranks-per-node N   ranks (devices) per node
  --intra GBPS,US      bandwidth (GB/s) and latency (us) inside a node
  --inter GBPS,US      the same between nodes
  --rate FWD,BWD       one rank's kernel rate in TFLOP/s (4 d FLOPs per computed score forward, 10 d backward;
                       2 (d + dv) and 6 d + 4 dv with --value-head-dim)
  --partial-tile X     a masked tile's cost relative to a whole one (default 1)
Problem:
  --seq N[,N...]       sequence lengths (default 131072,262144,524288,1048576,2097152,4194304)
  --ranks N[,N...]     rank counts (default 8,16,32,...,4096)
  --batch N --heads N --kv-heads N --head-dim N   (default 1, 32, 8, 128)
  --value-head-dim N   V's head dim where it differs from --head-dim (MLA: --head-dim 192 --value-head-dim 128)
  --dtype fp32|bf16|fp16 (default bf16)   --no-causal   --window W
  --json FILE          also write the table in perf/'s result format (perf/plot draws plan.png)
)";

std::pair<double, double> parse_pair(const std::string& flag, const std::string& text) {
  double a = 0, b = 0;
  char tail = 0;
  rfa::require(std::sscanf(text.c_str(), "%lf,%lf%c", &a, &b, &tail) == 2 && a > 0 && b >= 0, flag,
               " takes two numbers A,B (A > 0), got '", text, "'");
  return {a, b};
}

MachineModel preset(const std::string& name) {
  MachineModel m;
  if (name == "h100-cluster") {
    m.ranks_per_node = 8;
    m.intra_node = {3e-6, 450e9};
    m.inter_node = {5e-6, 50e9};
    m.forward_flops_per_s = 275e12;
    m.backward_flops_per_s = 150e12;
    m.forward_tile = {128, 64, false};
    m.backward_tile = {32, 128, false};
  } else if (name == "cpu-cluster") {
    m.ranks_per_node = 2;
    m.intra_node = {1e-6, 20e9};
    m.inter_node = {2e-6, 25e9};
    m.forward_flops_per_s = 64 * 92.3e9;
    m.backward_flops_per_s = 64 * 94.3e9;
  } else {
    rfa::fail(RFA_ERROR_INVALID_ARGUMENT, "--machine must be h100-cluster or cpu-cluster, got '", name, "'");
  }
  return m;
}

int run(int argc, char** argv) {
  std::string machine_name = "h100-cluster", json;
  std::vector<std::pair<std::string, std::string>> overrides;
  std::vector<std::int64_t> seqs = {131072, 262144, 524288, 1048576, 2097152, 4194304}, ranks;
  for (long long p = 8; p <= 4096; p *= 2) ranks.push_back(p);
  rfa::engine::AttentionConfig c;
  c.batch = 1, c.heads = 32, c.kv_heads = 8, c.head_dim = 128, c.dtype = RFA_DTYPE_BFLOAT16, c.mask = RFA_MASK_CAUSAL;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (flag == "--no-causal") {
      c.mask = RFA_MASK_NONE;
      continue;
    }
    rfa::require(i + 1 < argc, flag, " needs a value (rfa_plan --help)");
    const std::string value = argv[++i];
    if (flag == "--machine") {
      machine_name = value;
    } else if (flag == "--ranks-per-node" || flag == "--intra" || flag == "--inter" || flag == "--rate" ||
               flag == "--partial-tile") {
      overrides.emplace_back(flag, value);
    } else if (flag == "--seq") {
      seqs = whole_numbers(flag, value, 1);
    } else if (flag == "--ranks") {
      ranks = whole_numbers(flag, value, 1, std::numeric_limits<int>::max());
    } else if (flag == "--batch") {
      c.batch = whole_number(flag, value, 1);
    } else if (flag == "--heads") {
      c.heads = whole_number(flag, value, 1);
    } else if (flag == "--kv-heads") {
      c.kv_heads = whole_number(flag, value, 1);
    } else if (flag == "--head-dim") {
      c.head_dim = whole_number(flag, value, 1);
    } else if (flag == "--value-head-dim") {
      c.value_dim = whole_number(flag, value, 1);
    } else if (flag == "--window") {
      c.window = whole_number(flag, value, 0);
    } else if (flag == "--dtype") {
      rfa::require(value == "fp32" || value == "bf16" || value == "fp16", "--dtype must be fp32, bf16 or fp16");
      c.dtype = value == "fp32" ? RFA_DTYPE_FLOAT32 : value == "bf16" ? RFA_DTYPE_BFLOAT16 : RFA_DTYPE_FLOAT16;
    } else if (flag == "--json") {
      json = value;
    } else {
      rfa::fail(RFA_ERROR_INVALID_ARGUMENT, "unknown option '", flag, "' (rfa_plan --help)");
    }
  }
  MachineModel m = preset(machine_name);
  for (const auto& [flag, value] : overrides) {
    if (flag == "--ranks-per-node") {
      m.ranks_per_node = whole_int(flag, value, 1);
    } else if (flag == "--intra" || flag == "--inter") {
      const auto [gbps, us] = parse_pair(flag, value);
      (flag == "--intra" ? m.intra_node : m.inter_node) = rfa::model::Link{us * 1e-6, gbps * 1e9};
    } else if (flag == "--rate") {
      const auto [fwd, bwd] = parse_pair(flag, value);
      rfa::require(bwd > 0, "--rate: the backward rate must be positive");
      m.forward_flops_per_s = fwd * 1e12, m.backward_flops_per_s = bwd * 1e12;
    } else {
      char* end = nullptr;
      const double x = std::strtod(value.c_str(), &end);
      rfa::require(*end == '\0' && x > 0, "--partial-tile must be a positive number, got '", value, "'");
      m.forward_masked_tile_cost = m.backward_masked_tile_cost = x;
      m.forward_masked_visible_cost = m.backward_masked_visible_cost = 0.0;
    }
  }

  std::printf(
      "rfa_plan: %s, %d ranks per node, links %.0f GB/s %.1f us inside a node, %.0f GB/s %.1f us between; "
      "kernels %.1f / %.1f TFLOP/s per rank\n",
      machine_name.c_str(), m.ranks_per_node, m.intra_node.bytes_per_s / 1e9, m.intra_node.latency_s * 1e6,
      m.inter_node.bytes_per_s / 1e9, m.inter_node.latency_s * 1e6, m.forward_flops_per_s / 1e12,
      m.backward_flops_per_s / 1e12);
  const std::string dims =
      std::to_string(c.head_dim) + (c.value_dim != 0 ? "/" + std::to_string(c.value_dim) : std::string());
  std::printf("problem: B=%lld H=%lld/%lld d=%s %s%s; TFLOP/s per device over the visible scores\n", (long long)c.batch,
              (long long)c.heads, (long long)c.kv_heads, dims.c_str(),
              c.mask == RFA_MASK_CAUSAL ? "causal" : "non-causal",
              c.window > 0 ? (", window " + std::to_string(c.window)).c_str() : "");
  std::printf("%9s %6s  %-26s %10s %10s %8s %8s  %s\n", "S", "P", "plan", "fwd ms", "bwd ms", "fwd TF", "bwd TF",
              "zigzag ring fwd / bwd TF");
  std::vector<rfa::perf::BenchCase> cases;
  for (long long S : seqs)
    for (long long P : ranks) {
      c.seq_total = S;
      const std::vector<rfa::model::Plan> plans = rfa::model::rank_plans(c, int(P), m);
      if (plans.empty()) {
        std::printf("%9lld %6lld  no plan fits (S must split over the ranks)\n", S, P);
        continue;
      }
      // Over the scores the mask leaves visible (attention_work.hpp), windows and documents too.
      const rfa::perf::MaskShape mask{S, c.mask == RFA_MASK_CAUSAL, c.window, c.doc_bounds, {}};
      const double visible = rfa::perf::visible_scores(mask);
      const double fwd_flops = rfa::perf::visible_flops(double(c.batch), double(c.heads), double(c.head_dim),
                                                        double(c.dv()), visible, false);
      const double bwd_flops =
          rfa::perf::visible_flops(double(c.batch), double(c.heads), double(c.head_dim), double(c.dv()), visible, true);
      auto per_device = [&](double flops, double s) { return flops / double(P) / s / 1e12; };
      const rfa::model::Plan& best = plans.front();
      std::string ring = "-";
      for (const rfa::model::Plan& p : plans)
        if (p.choice.kind == rfa::engine::StrategyKind::ring && p.layout == RFA_LAYOUT_ZIGZAG) {
          char text[64];
          std::snprintf(text, sizeof text, "%.1f / %.1f", per_device(fwd_flops, p.prediction.forward.seconds),
                        per_device(bwd_flops, p.prediction.backward.seconds));
          ring = text;
        }
      const double f = best.prediction.forward.seconds, b = best.prediction.backward.seconds;
      std::printf("%9lld %6lld  %-26s %10.2f %10.2f %8.1f %8.1f  %s\n", S, P, best.name().c_str(), 1e3 * f, 1e3 * b,
                  per_device(fwd_flops, f), per_device(bwd_flops, b), ring.c_str());
      rfa::perf::BenchCase bc;
      bc.name = "plan/S=" + std::to_string(S) + "/P=" + std::to_string(P);
      bc.labels = {{"suite", "plan"}, {"plan", best.name()}, {"shape", "S=" + std::to_string(S)}};
      bc.counters = {{"ranks", double(P)},
                     {"seq", double(S)},
                     {"forward_tflops_per_device", per_device(fwd_flops, f)},
                     {"backward_tflops_per_device", per_device(bwd_flops, b)}};
      bc.repetitions.push_back({f + b, {}});
      cases.push_back(bc);
    }
  if (!json.empty()) {
    rfa::perf::ContextFields context = rfa::perf::collect_machine_context("rfa_plan");
    rfa::perf::set_field(context, "suite", "plan");
    rfa::perf::set_field(context, "machine_model", machine_name);
    rfa::perf::write_results_json(json, context, cases);
    std::printf("results written to %s\n", json.c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rfa_plan: error: %s\n", e.what());
    return 2;
  }
}
