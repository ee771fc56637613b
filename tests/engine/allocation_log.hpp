// SPDX-License-Identifier: BSD-3-Clause
// Engine allocations observed through Kokkos' tool hooks: every View allocation is reported,
// and those labelled "rfa::" (the engines' workspaces) are summed while a call runs.
#pragma once

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cstdint>
#include <map>
#include <string>

namespace rfa {
namespace test {

struct AllocationLog {
  std::int64_t live = 0, peak = 0, largest = 0;
  std::map<const void*, std::int64_t> sizes;
};

namespace detail {
inline AllocationLog*& current_log() {
  static AllocationLog* log = nullptr;
  return log;
}
inline void on_allocate(Kokkos::Profiling::SpaceHandle, const char* label, const void* ptr, std::uint64_t size) {
  AllocationLog* log = current_log();
  if (!log || std::string(label).rfind("rfa::", 0) != 0) return;
  log->sizes[ptr] = std::int64_t(size);
  log->live += std::int64_t(size);
  log->peak = std::max(log->peak, log->live);
  log->largest = std::max(log->largest, std::int64_t(size));
}
inline void on_deallocate(Kokkos::Profiling::SpaceHandle, const char*, const void* ptr, std::uint64_t) {
  AllocationLog* log = current_log();
  if (!log) return;
  auto it = log->sizes.find(ptr);
  if (it == log->sizes.end()) return;
  log->live -= it->second;
  log->sizes.erase(it);
}
}  // namespace detail

/// Runs `call` with the hooks installed and returns what the engine allocated during it.
template <class Call>
AllocationLog log_allocations(Call&& call) {
  AllocationLog log;
  Kokkos::Tools::Experimental::set_allocate_data_callback(detail::on_allocate);
  Kokkos::Tools::Experimental::set_deallocate_data_callback(detail::on_deallocate);
  detail::current_log() = &log;
  call();
  detail::current_log() = nullptr;
  Kokkos::Tools::Experimental::set_allocate_data_callback(nullptr);
  Kokkos::Tools::Experimental::set_deallocate_data_callback(nullptr);
  return log;
}

}  // namespace test
}  // namespace rfa
