// SPDX-License-Identifier: BSD-3-Clause
// Kokkos before 4.0 keeps one process-wide team-scratch and reduction buffer for its host
// backend (Serial's HostThreadTeamData) and reallocates it at every team or reduction dispatch
// without a lock: two threads dispatching at once (two contexts used concurrently, which rfa
// allows) overwrote each other's scratch and reallocated it under each other. Those dispatches
// hold this lock on such a Kokkos; from 4.0 on Kokkos serializes them itself and the lock is
// nothing. A dispatch never blocks on communication while it holds it (its progress hook only
// tests requests), so two contexts waiting on each other's ranks cannot deadlock on it.
#pragma once

#include <Kokkos_Core.hpp>
#include <mutex>
#include <type_traits>

namespace rfa {
namespace kernels {

/// The one lock of every host dispatch that needs it (one per process: an inline function's
/// static).
inline std::mutex& host_dispatch_mutex() {
  static std::mutex m;
  return m;
}

/// Held for one team or reduction dispatch on `Exec`: locks host_dispatch_mutex() where Exec is
/// the host execution space of a Kokkos older than 4.0, does nothing otherwise.
template <class Exec>
class HostDispatchLock {
 public:
  static constexpr bool kLocks = KOKKOS_VERSION < 40000 && std::is_same<Exec, Kokkos::DefaultHostExecutionSpace>::value;
  HostDispatchLock() {
    if constexpr (kLocks) host_dispatch_mutex().lock();
  }
  ~HostDispatchLock() {
    if constexpr (kLocks) host_dispatch_mutex().unlock();
  }
  HostDispatchLock(const HostDispatchLock&) = delete;
  HostDispatchLock& operator=(const HostDispatchLock&) = delete;
};

}  // namespace kernels
}  // namespace rfa
