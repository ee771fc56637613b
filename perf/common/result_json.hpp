// SPDX-License-Identifier: BSD-3-Clause
// The one result format of perf/ (docs/benchmarks.md): Google Benchmark's JSON layout, a
// "context" block of provenance (run_context.hpp) and a "benchmarks" list with one entry per
// repetition of each case, followed by the case's median. The regression comparator
// (perf/compare) and the plots (perf/plot) read exactly this; the kernel benchmark, which
// Google Benchmark drives itself, writes the same layout through the library.
#pragma once

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "machine_context.hpp"

namespace rfa {
namespace perf {

/// One timed repetition of a case and the figures of merit measured in it.
struct Repetition {
  double seconds = 0.0;                    ///< the case's time (a ring: its slowest rank)
  std::map<std::string, double> counters;  ///< e.g. tflops, peak_fraction, rank_max_s, rank_min_s
};

/// One case: a name unique within the run, what it is, and its repetitions.
struct BenchCase {
  std::string name;                           ///< e.g. "ring/fwd/zigzag"
  std::map<std::string, std::string> labels;  ///< suite, strategy, layout, dtype, shape, ...
  std::map<std::string, double> counters;     ///< the same in every repetition (bytes_moved, correct)
  std::vector<Repetition> repetitions;
};

/// A results file that cannot be written. Not rfa::Error: this writer depends on nothing of
/// rfa's, so that kernels_cuda's GPU benchmarks (no Kokkos, no MPI, no rfa build) use it too.
class ResultsFileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Writes the results to `path` (overwritten). Throws ResultsFileError naming the path when it
/// cannot be written.
void write_results_json(const std::string& path, const ContextFields& context, const std::vector<BenchCase>& cases);

/// `v` as a JSON number: the shortest decimal text that reads back as exactly `v` (so byte
/// counts and other whole figures up to 2^53 keep every digit); `null` for inf and nan, which
/// JSON lacks and the comparator reads as "not measured".
std::string json_number(double v);

/// The median of `values` (0 for none).
double median(std::vector<double> values);

}  // namespace perf
}  // namespace rfa
