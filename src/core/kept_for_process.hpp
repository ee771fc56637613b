// SPDX-License-Identifier: BSD-3-Clause
// Memory that must never be freed: the buffers a transport left to a late rank after a timeout
// (an abandoned transfer may still write them). They are kept to the end of the process,
// reachable from a static, so that leak checkers do not count them.
#pragma once

#include <mutex>
#include <utility>
#include <vector>

namespace rfa {

/// Keeps `value` (a View, a pointer: whatever owns the memory) for the life of the process.
/// Thread-safe: contexts used from different threads may set buffers aside at once.
template <class T>
void keep_for_process(T value) {
  static auto* kept = new std::vector<T>();
  static std::mutex kept_mutex;
  const std::lock_guard<std::mutex> lock(kept_mutex);
  kept->push_back(std::move(value));
}

}  // namespace rfa
