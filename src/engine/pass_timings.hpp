// SPDX-License-Identifier: BSD-3-Clause
// What a pass of an engine spent its time on, and the scoped timers that count it. Compute is
// counted twice: in wall seconds, which is what a rank with cores of its own waits for, and in
// the CPU seconds its process used meanwhile, which is its work whatever else shares the cores
// (ranks that outnumber the cores take turns, and their wall time counts each other's work).
#pragma once

#include <time.h>

#include <chrono>
#include <cstdint>

namespace rfa {
namespace engine {

/// What a run spent its time on (seconds, this rank), for the main job and the benchmark.
struct PassTimings {
  double total = 0.0;
  double compute = 0.0;      ///< inside the flash kernels and the merge
  double compute_cpu = 0.0;  ///< CPU seconds this rank's process used in `compute` (its work)
  double wait = 0.0;         ///< blocked in Exchange::wait (communication not hidden)
  int steps_computed = 0;    ///< ring steps whose block was not fully masked
  /// Of the steps prepared for the pass, those cuDNN computes (CUDA contexts); counted when the
  /// pass is prepared, so it compares with steps_computed in passes that compute (not in a
  /// communication-only pass, whose steps_computed is 0).
  int steps_on_cudnn = 0;
  std::int64_t bytes_sent = 0;
};

/// Adds the seconds between construction and destruction to a counter.
class ScopedSeconds {
 public:
  explicit ScopedSeconds(double& sink) : sink_(sink), start_(std::chrono::steady_clock::now()) {}
  ~ScopedSeconds() { sink_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }
  ScopedSeconds(const ScopedSeconds&) = delete;
  ScopedSeconds& operator=(const ScopedSeconds&) = delete;

 private:
  double& sink_;
  std::chrono::steady_clock::time_point start_;
};

/// CPU seconds this process has used (every thread's, so a host execution space with threads
/// counts them all); 0 where the clock is missing.
inline double process_cpu_seconds() {
  timespec t{};
  if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t) != 0) return 0.0;
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

/// Counts the time between construction and destruction as a pass's compute: wall seconds in
/// `compute`, the process's CPU seconds in `compute_cpu`.
class ScopedCompute {
 public:
  explicit ScopedCompute(PassTimings& timings) : wall_(timings.compute), cpu_(timings.compute_cpu) {}
  ~ScopedCompute() { cpu_ += process_cpu_seconds() - cpu_start_; }
  ScopedCompute(const ScopedCompute&) = delete;
  ScopedCompute& operator=(const ScopedCompute&) = delete;

 private:
  ScopedSeconds wall_;
  double& cpu_;
  double cpu_start_ = process_cpu_seconds();
};

}  // namespace engine
}  // namespace rfa
