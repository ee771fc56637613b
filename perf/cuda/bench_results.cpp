// SPDX-License-Identifier: BSD-3-Clause
#include "bench_results.hpp"

#include <algorithm>

namespace rfa_cuda_bench {

std::vector<rfa::perf::BenchCase> to_cases(const std::vector<Measurement>& measurements, const std::string& suite,
                                           const std::string& dtype, const std::string& shape) {
  std::vector<rfa::perf::BenchCase> cases;
  for (const Measurement& m : measurements) {
    rfa::perf::BenchCase c;
    c.name = m.name;
    c.labels = {{"suite", suite}, {"dtype", dtype}, {"shape", shape}};
    for (const auto& [k, v] : m.labels) c.labels[k] = v;
    for (const auto& [k, v] : m.counters) c.counters[k] = v;
    std::vector<double> seconds;
    for (const double ms : m.ms) {
      rfa::perf::Repetition r;
      r.seconds = ms * 1e-3;
      if (m.flops > 0 && ms > 0) r.counters["tflops"] = m.flops / r.seconds * 1e-12;
      c.repetitions.push_back(r);
      seconds.push_back(r.seconds);
    }
    const double median_ms = rfa::perf::median(seconds) * 1e3;
    for (const PeerFigure& p : m.peers) {
      if (p.ms > 0) {
        c.counters[p.name + "_ms"] = p.ms;
        if (m.flops > 0) c.counters[p.name + "_tflops"] = m.flops / (p.ms * 1e-3) * 1e-12;
        if (median_ms > 0) c.counters[p.name + "_speedup"] = p.ms / median_ms;
      } else {
        c.labels[p.name + "_error"] = p.error.empty() ? "not reported" : p.error;
      }
    }
    cases.push_back(c);
  }
  return cases;
}

std::string cuda_version_text(int version) {
  if (version <= 0) return "none";
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

rfa::perf::ContextFields gpu_context(const std::string& program, const std::string& gpu, int runtime_version,
                                     int driver_version, const std::string& suite, const std::string& dtype,
                                     const std::string& shape, double peak_tflops, const std::string& peak_what) {
  rfa::perf::ContextFields c = rfa::perf::collect_machine_context(program);
  rfa::perf::set_field(c, "gpu_model", gpu);
  rfa::perf::set_field(c, "cuda_version", cuda_version_text(runtime_version));
  rfa::perf::set_field(c, "cuda_driver_version", cuda_version_text(driver_version));
  rfa::perf::set_field(c, "device", "cuda");
  rfa::perf::set_field(c, "ranks", "1");
  rfa::perf::set_field(c, "suite", suite);
  rfa::perf::set_field(c, "dtype", dtype);
  rfa::perf::set_field(c, "shape", shape);
  // The peak measured in the same run, or said to be missing, never invented.
  if (peak_tflops > 0) {
    rfa::perf::set_field(c, "peak", std::to_string(peak_tflops) + " TFLOP/s (" + peak_what + ", PyTorch, same run)");
    rfa::perf::set_field(c, "gpu_peak_tflops", std::to_string(peak_tflops));
  } else {
    rfa::perf::set_field(c, "peak", "not measured");
  }
  return c;
}

}  // namespace rfa_cuda_bench
