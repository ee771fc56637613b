// SPDX-License-Identifier: BSD-3-Clause
// Memory that must never be freed: the buffers a transport left to a late rank after a timeout
// (an abandoned transfer may still write them). They are kept to the end of the process,
// reachable from a static, so that leak checkers do not count them.
#pragma once

#include <mutex>
#include <utility>
#include <vector>

namespace rfa {

/// The one mutex of every kept list (capi/fork_handlers.cpp takes it across a fork).
inline std::mutex& kept_for_process_mutex() {
  static std::mutex kept_mutex;
  return kept_mutex;
}

/// Keeps `value` (a View, a pointer: whatever owns the memory) for the life of the process.
/// Thread-safe: contexts used from different threads may set buffers aside at once.
template <class T>
void keep_for_process(T value) {
  static auto* kept = new std::vector<T>();
  const std::lock_guard<std::mutex> lock(kept_for_process_mutex());
  kept->push_back(std::move(value));
}

}  // namespace rfa
