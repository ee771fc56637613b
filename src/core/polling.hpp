// SPDX-License-Identifier: BSD-3-Clause
// Host-side polling with a deadline: how rfa waits for work it cannot block on safely (every
// NCCL wait, the staged transport's device copies, a CUDA stream's queued work), so that none
// of them can block forever (a blocking cudaEventSynchronize or cudaStreamSynchronize could).
#pragma once

#include <chrono>
#include <thread>

namespace rfa {

using Clock = std::chrono::steady_clock;

/// The point `seconds` after `start`, saturated so that huge timeouts do not overflow.
inline Clock::time_point deadline_after(Clock::time_point start, double seconds) {
  const double max_seconds = 1e9;  // ~30 years: "forever" without overflowing the clock
  const auto span = std::chrono::duration<double>(seconds < max_seconds ? seconds : max_seconds);
  return start + std::chrono::duration_cast<Clock::duration>(span);
}

/// Between two polls: yield for the first millisecond (exchanges usually finish within a few
/// microseconds of being checked), then sleep briefly so a long wait does not burn a core
/// the application's other threads may need.
inline void pause_between_polls(Clock::time_point waiting_since) {
  if (Clock::now() - waiting_since < std::chrono::milliseconds(1)) {
    std::this_thread::yield();
  } else {
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

/// Polls `ready()` (a callable returning bool) until it returns true or `timeout_s` seconds have
/// passed (0 or less: no deadline), pausing between polls as above. Returns whether it became
/// ready; `ready` is polled at least once, and once more after the deadline has passed, so that
/// work finished by then is never reported late.
template <class Ready>
bool poll_until(Ready&& ready, double timeout_s) {
  const Clock::time_point since = Clock::now();
  const Clock::time_point deadline = timeout_s > 0.0 ? deadline_after(since, timeout_s) : Clock::time_point::max();
  while (!ready()) {
    if (Clock::now() >= deadline) return ready();
    pause_between_polls(since);
  }
  return true;
}

}  // namespace rfa
