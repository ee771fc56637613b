// SPDX-License-Identifier: BSD-3-Clause
// Engine buffers are allocated only through a Workspace, which counts their bytes: the
// per-rank memory formula in the README is checked against this count in the tests.
#pragma once

#include <chrono>
#include <cstdint>
#include <exception>
#include <map>
#include <string>
#include <utility>

#include "comm/communicator.hpp"
#include "kernels/flash_attention.hpp"

namespace rfa {
namespace engine {

/// A 4-d / 3-d row-major tensor in memory space `Space` (host kernels: kernels::Tensor4/3).
template <class T, class Space>
using SpaceTensor4 = Kokkos::View<T****, Kokkos::LayoutRight, Space>;
template <class T, class Space>
using SpaceTensor3 = Kokkos::View<T***, Kokkos::LayoutRight, Space>;

/// Buffers a backend keeps from one call to the next, by name. A device backend keeps its
/// workspace instead of freeing it at the end of a call: its kernels may still be running on
/// the caller's stream when the call returns (docs/architecture.md §8), and a free there would
/// either race with them or synchronize the device.
template <class Space>
class WorkspaceCache {
 public:
  /// Raw bytes for `name`, reallocated only when more are needed.
  void* bytes(const std::string& name, std::int64_t bytes) {
    auto& slot = buffers_[name];
    if (std::int64_t(slot.extent(0)) < bytes)
      slot = Kokkos::View<unsigned char*, Space>(Kokkos::view_alloc(name, Kokkos::WithoutInitializing),
                                                 std::size_t(bytes));
    return slot.data();
  }

 private:
  std::map<std::string, Kokkos::View<unsigned char*, Space>> buffers_;
};

///
/// Buffers come uninitialized: the engine writes every one before reading it (receives,
/// kernel outputs, or an explicit fill), and zero-filling ~10 local blocks per call would cost
/// a few percent of a ring pass. Without a cache every buffer is allocated for this call
/// (host); with one they are taken from it (device).
template <class Space = Kokkos::HostSpace>
class Workspace {
 public:
  Workspace() = default;
  explicit Workspace(WorkspaceCache<Space>* cache) : cache_(cache) {}

  template <class T>
  SpaceTensor4<T, Space> tensor4(const char* name, std::int64_t a, std::int64_t b, std::int64_t c, std::int64_t d) {
    const std::int64_t n = a * b * c * d * std::int64_t(sizeof(T));
    bytes_ += n;
    if (cache_) return SpaceTensor4<T, Space>(static_cast<T*>(cache_->bytes(name, n)), a, b, c, d);
    return SpaceTensor4<T, Space>(Kokkos::view_alloc(std::string(name), Kokkos::WithoutInitializing), a, b, c, d);
  }
  template <class T>
  SpaceTensor3<T, Space> tensor3(const char* name, std::int64_t a, std::int64_t b, std::int64_t c) {
    const std::int64_t n = a * b * c * std::int64_t(sizeof(T));
    bytes_ += n;
    if (cache_) return SpaceTensor3<T, Space>(static_cast<T*>(cache_->bytes(name, n)), a, b, c);
    return SpaceTensor3<T, Space>(Kokkos::view_alloc(std::string(name), Kokkos::WithoutInitializing), a, b, c);
  }
  std::int64_t bytes() const { return bytes_; }

 private:
  WorkspaceCache<Space>* cache_ = nullptr;
  std::int64_t bytes_ = 0;
};

/// Keeps outstanding exchanges moving while a kernel runs (kernels::ProgressHook). An error
/// seen while polling is kept and rethrown by rethrow_if_failed(), outside the kernel.
class ExchangePoller {
 public:
  void watch(comm::Exchange* a, comm::Exchange* b = nullptr, comm::Exchange* c = nullptr,
             comm::Exchange* d = nullptr) {
    watched_[0] = a;
    watched_[1] = b;
    watched_[2] = c;
    watched_[3] = d;
  }
  kernels::ProgressHook hook() { return kernels::ProgressHook{&ExchangePoller::poll, this}; }
  void rethrow_if_failed() {
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  }

 private:
  static void poll(void* self) {
    auto* me = static_cast<ExchangePoller*>(self);
    if (me->error_) return;
    try {
      for (comm::Exchange* e : me->watched_)
        if (e && !e->done()) e->test();
    } catch (...) {
      me->error_ = std::current_exception();
    }
  }
  comm::Exchange* watched_[4] = {nullptr, nullptr, nullptr, nullptr};
  std::exception_ptr error_;
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

}  // namespace engine
}  // namespace rfa
