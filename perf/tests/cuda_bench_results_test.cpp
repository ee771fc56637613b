// SPDX-License-Identifier: BSD-3-Clause
// The GPU benchmarks' JSON without a GPU: known timings and peer figures through the same
// builder the benchmarks use (perf/cuda/bench_results.hpp), checked here, then written to argv[1]
// for the next test, which reads the file with perf/compare.
#include <cmath>
#include <cstdio>
#include <string>

#include "bench_results.hpp"

namespace {

int failures = 0;

void expect(bool ok, const std::string& what) {
  if (!ok) {
    std::printf("FAIL: %s\n", what.c_str());
    ++failures;
  }
}

bool near(double a, double b) { return std::fabs(a - b) <= 1e-9 * std::fabs(b); }

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT.json\n", argv[0]);
    return 2;
  }
  using rfa_cuda_bench::Measurement;
  Measurement fwd;
  fwd.name = "cuda/fwd/causal";
  fwd.flops = 2e12;  // 2 TFLOP in each run
  for (int i = 0; i < 10; ++i) fwd.ms.push_back(10.0 + 0.1 * i);
  fwd.labels = {{"pass", "forward"}, {"mask", "causal"}};
  fwd.peers = {{"sdpa_flash", 12.0, ""}, {"sdpa_cudnn", 0, "RuntimeError: No available kernel"}};
  Measurement step;
  step.name = "cuda_ring_step/P4/fwd_fused";
  step.ms = std::vector<double>(10, 5.0);
  step.counters = {{"efficiency", 0.8}};
  const auto cases = rfa_cuda_bench::to_cases({fwd, step}, "cuda_kernels", "bf16", "B=1 S=8192 H=16/16 d=128");

  expect(cases.size() == 2, "two cases");
  const auto& c = cases[0];
  expect(c.repetitions.size() == 10, "one repetition per timed iteration");
  expect(near(c.repetitions[0].seconds, 0.010), "seconds from ms");
  expect(near(c.repetitions[0].counters.at("tflops"), 200.0), "tflops = flops / time");
  expect(c.labels.at("suite") == "cuda_kernels" && c.labels.at("dtype") == "bf16" && c.labels.at("pass") == "forward",
         "labels");
  expect(near(c.counters.at("sdpa_flash_ms"), 12.0), "peer ms");
  expect(near(c.counters.at("sdpa_flash_speedup"), 12.0 / 10.45), "peer speedup against rfa's median");
  expect(near(c.counters.at("sdpa_flash_tflops"), 2e12 / 12e-3 * 1e-12), "peer tflops");
  expect(c.labels.at("sdpa_cudnn_error") == "RuntimeError: No available kernel", "a missing peer says why");
  expect(c.counters.count("sdpa_cudnn_ms") == 0, "no figure for a missing peer");
  expect(cases[1].repetitions[0].counters.count("tflops") == 0, "no tflops without a FLOP count");
  expect(near(cases[1].counters.at("efficiency"), 0.8), "constant counters");

  const auto context = rfa_cuda_bench::gpu_context("bench_results_test", "NVIDIA H100 80GB HBM3", 13000, 13010,
                                                   "cuda_kernels", "bf16", "B=1 S=8192 H=16/16 d=128");
  bool has_gpu = false;
  for (const auto& [k, v] : context) has_gpu = has_gpu || (k == "gpu_model" && v == "NVIDIA H100 80GB HBM3");
  expect(has_gpu, "the GPU in the context");
  expect(rfa_cuda_bench::cuda_version_text(13000) == "13.0" && rfa_cuda_bench::cuda_version_text(12080) == "12.8",
         "CUDA versions as text");
  try {
    rfa::perf::write_results_json(argv[1], context, cases);
  } catch (const rfa::perf::ResultsFileError& e) {
    std::printf("FAIL: %s\n", e.what());
    return 1;
  }
  std::printf("bench_results_test: %d failure(s); wrote %s\n", failures, argv[1]);
  return failures == 0 ? 0 : 1;
}
