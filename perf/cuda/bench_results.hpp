// SPDX-License-Identifier: BSD-3-Clause
// The GPU benchmarks' results in perf/'s one format (perf/common/result_json.hpp): each timed
// kernel sequence becomes a case with one repetition per CUDA-event-timed iteration, so that
// perf/compare's rank test has its samples. Host C++ only (no CUDA, Kokkos or MPI): the same
// code runs in the benchmarks and in a test that needs no GPU.
#pragma once

#include <string>
#include <vector>

#include "machine_context.hpp"
#include "result_json.hpp"

namespace rfa_cuda_bench {

/// A peer's (PyTorch SDPA backend's) median for the same measurement, or why there is none.
struct PeerFigure {
  std::string name;   ///< "sdpa_flash", "sdpa_cudnn"
  double ms = 0;      ///< > 0: measured
  std::string error;  ///< why not, when ms is 0
};

/// One timed kernel sequence.
struct Measurement {
  std::string name;        ///< unique in the file: "cuda/fwd/causal", "cuda_ring_step/P4/fwd_fused"
  std::vector<double> ms;  ///< every timed iteration
  double flops = 0;        ///< over the visible scores, attention_work.hpp (0: not a FLOP count, no tflops)
  std::vector<std::pair<std::string, std::string>> labels;  ///< pass, mask, ...
  std::vector<std::pair<std::string, double>> counters;     ///< the same in every repetition
  std::vector<PeerFigure> peers;
};

/// The cases of `measurements`, each labelled with suite, dtype and shape; peers become
/// counters <name>_ms, <name>_tflops and <name>_speedup (peer ms / rfa median ms) or a label
/// <name>_error.
std::vector<rfa::perf::BenchCase> to_cases(const std::vector<Measurement>& measurements, const std::string& suite,
                                           const std::string& dtype, const std::string& shape);

/// The provenance of a GPU benchmark: the machine's fields, the GPU as the CUDA runtime names
/// it, the runtime and driver versions ("13.0"), what the run was, and the device's peak measured
/// in the same run (`peak_tflops`, what was measured in `peak_what`; 0: "not measured").
rfa::perf::ContextFields gpu_context(const std::string& program, const std::string& gpu, int runtime_version,
                                     int driver_version, const std::string& suite, const std::string& dtype,
                                     const std::string& shape, double peak_tflops = 0,
                                     const std::string& peak_what = "");

/// "13.0" from CUDA's 13000.
std::string cuda_version_text(int version);

}  // namespace rfa_cuda_bench
