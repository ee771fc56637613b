// Engine buffers are allocated only through a Workspace, which counts their bytes: the
// per-rank memory formula in the README is checked against this count in the tests.
#pragma once

#include <chrono>
#include <cstdint>
#include <exception>
#include <string>
#include <utility>

#include "comm/communicator.hpp"
#include "kernels/flash_attention.hpp"

namespace rfa {
namespace engine {

///
/// Buffers come uninitialized: the engine writes every one before reading it (receives,
/// kernel outputs, or an explicit fill), and zero-filling ~10 local blocks per call would cost
/// a few percent of a ring pass.
class Workspace {
 public:
  template <class T>
  kernels::Tensor4<T> tensor4(const char* name, std::int64_t a, std::int64_t b, std::int64_t c, std::int64_t d) {
    bytes_ += a * b * c * d * std::int64_t(sizeof(T));
    return kernels::Tensor4<T>(Kokkos::view_alloc(std::string(name), Kokkos::WithoutInitializing), a, b, c, d);
  }
  template <class T>
  kernels::Tensor3<T> tensor3(const char* name, std::int64_t a, std::int64_t b, std::int64_t c) {
    bytes_ += a * b * c * std::int64_t(sizeof(T));
    return kernels::Tensor3<T>(Kokkos::view_alloc(std::string(name), Kokkos::WithoutInitializing), a, b, c);
  }
  std::int64_t bytes() const { return bytes_; }

 private:
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
