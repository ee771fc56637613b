// SPDX-License-Identifier: BSD-3-Clause
#include "collective/deadline.hpp"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <thread>
#include <vector>

#include "core/environment.hpp"
#include "core/error.hpp"
#include "core/text_stream.hpp"

namespace rfa::collective {

double timeout_from_environment() {
  const char* text = env_value(Env::timeout_s);
  if (text == nullptr || *text == '\0') return kDefaultTimeoutSeconds;
  double value = 0.0;
  if (!parse_timeout_seconds(text, &value)) {
    fail(RFA_ERROR_INVALID_ARGUMENT, "RFA_TIMEOUT_S is '", text,
         "'; it must be a number of seconds from 0 to 1e9 (0: no deadline)");
  }
  return value;
}

double resolve_timeout(double timeout_s) { return timeout_s < 0.0 ? timeout_from_environment() : timeout_s; }

namespace {
std::atomic<std::size_t> abandoned_bytes{0};
thread_local bool scope_set = false;
thread_local double scope_seconds = 0.0;
}  // namespace

std::size_t abandoned_collective_bytes() { return abandoned_bytes.load(std::memory_order_relaxed); }

void count_abandoned_collective_bytes(std::size_t bytes) {
  abandoned_bytes.fetch_add(bytes, std::memory_order_relaxed);
}

double current_timeout() {
  if (scope_set) return scope_seconds;
  try {
    return timeout_from_environment();
  } catch (const Error&) {
    return kDefaultTimeoutSeconds;
  }
}

DeadlineScope::DeadlineScope(double seconds) : previous_(scope_seconds), had_previous_(scope_set) {
  scope_set = true;
  scope_seconds = seconds;
}

DeadlineScope::~DeadlineScope() {
  scope_set = had_previous_;
  scope_seconds = previous_;
}

std::string seconds_text(double seconds) {
  TextStream s;
  s << seconds << " s";
  return s.str();
}

int wait_within(MPI_Request* requests, int count, MPI_Status* statuses, double timeout_s,
                const std::function<std::string(const int* done)>& on_timeout, std::chrono::milliseconds spin,
                std::chrono::microseconds nap) {
  if (!(timeout_s > 0.0) || timeout_s > 1e9) return MPI_Waitall(count, requests, statuses);  // none, NaN included
  using clock = std::chrono::steady_clock;
  const auto deadline =
      clock::now() + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(timeout_s));
  const auto spin_until = clock::now() + spin;
  for (;;) {
    int complete = 0;
    const int rc = MPI_Testall(count, requests, &complete, statuses);
    if (rc != MPI_SUCCESS || complete) return rc;
    const auto now = clock::now();
    if (now >= deadline) break;
    if (now < spin_until)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(nap);
  }
  std::vector<int> done(static_cast<std::size_t>(count), 0);
  for (int i = 0; i < count; ++i) {
    if (requests[i] == MPI_REQUEST_NULL) {
      done[static_cast<std::size_t>(i)] = 1;
    } else {
      MPI_Test(&requests[i], &done[static_cast<std::size_t>(i)], MPI_STATUS_IGNORE);
    }
  }
  throw Error(RFA_ERROR_TIMEOUT, on_timeout(done.data()));
}

}  // namespace rfa::collective
