// SPDX-License-Identifier: BSD-3-Clause
// Engine buffers are allocated only through a Workspace, which counts their bytes (the
// per-rank memory formula of docs/memory.md is checked against this count in the tests) and turns
// a refused allocation into an error every rank raises together.
#pragma once

#include <cstdint>
#include <exception>
#include <map>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "comm/communicator.hpp"
#include "core/allocation.hpp"
#include "core/error.hpp"
#include "core/kept_for_process.hpp"
#include "core/view_limits.hpp"
#include "engine/workspace_arena.hpp"
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
/// either race with them or synchronize the device. Where a transport that writes into the
/// buffers abandoned transfers (a timeout over a CUDA-aware MPI, which receives into them), they
/// are set aside for the life of the process instead of freed, as WorkspaceArena's are.
template <class Space>
class WorkspaceCache {
 public:
  WorkspaceCache() = default;
  ~WorkspaceCache() { set_aside_if_abandoned(); }
  WorkspaceCache(const WorkspaceCache&) = delete;
  WorkspaceCache& operator=(const WorkspaceCache&) = delete;

  /// A communicator whose transfers write into these buffers; it must outlive the cache's last
  /// buffer (an owner whose transport ends first releases the cache before).
  void watch(const comm::Communicator* transport) { watched_.watch(transport); }
  /// Whether a watched transport abandoned transfers (comm::Communicator::has_abandoned_transfers).
  bool transfers_abandoned() const { return watched_.abandoned(); }
  /// Raw bytes for `name`, reallocated only when more are needed. Throws
  /// RFA_ERROR_OUT_OF_MEMORY (name, bytes) when the allocator refuses.
  void* bytes(const std::string& name, std::int64_t bytes) {
    auto& slot = buffers_[name];
    grow_bytes<Space>(slot, name, bytes);
    return slot.data();
  }
  /// Frees every buffer (or sets them aside, above); the caller makes sure that no queued work
  /// still uses them.
  void release() {
    set_aside_if_abandoned();
    buffers_.clear();
  }
  /// Bytes allocated and kept between calls.
  std::int64_t held_bytes() const {
    std::int64_t n = 0;
    for (const auto& entry : buffers_) n += std::int64_t(entry.second.extent(0));
    return n;
  }

 private:
  /// Keeps the buffers for the life of the process (keep_for_process) when a watched
  /// transport abandoned transfers.
  void set_aside_if_abandoned() {
    if (buffers_.empty() || !watched_.abandoned()) return;  // empty: also once an owner released it
    for (auto& entry : buffers_) keep_for_process(std::move(entry.second));
    buffers_.clear();
  }

  std::map<std::string, Kokkos::View<unsigned char*, Space>> buffers_;
  comm::WatchedTransports watched_;
};

/// The kind of an engine call, for WorkspaceArena: its direction and a variant (the ring's
/// schedule mode), each kind with buffers of its own sizes.
constexpr int workspace_pass(bool backward, int variant = 0) { return 2 * variant + (backward ? 1 : 0); }

/// The buffers of one engine call. Buffers come uninitialized: the engine writes every one
/// before reading it (receives, kernel outputs, or an explicit fill), and zero-filling ~10 local
/// blocks per call would cost a few percent of a ring pass. They are carved from the engine's
/// arena (host: WorkspaceArena, which keeps them for the next call), taken from its cache
/// (device: WorkspaceCache), or, with neither, allocated for this call alone and freed with the
/// Workspace.
///
/// Tensors are carved from byte buffers (core/allocation.hpp: 64-bit sizes on every Kokkos).
/// An allocation that fails does not throw: the engine allocates before its ranks agree that
/// the call may go on, and a throw on one rank there would leave the others waiting in the
/// first exchange. The failure is kept, later buffers are not attempted (they come back empty),
/// and throw_if_failed(), called inside that agreement, raises it on every rank.
template <class Space = Kokkos::HostSpace>
class Workspace {
 public:
  Workspace() = default;
  explicit Workspace(WorkspaceCache<Space>* cache) : cache_(cache) {}
  /// A call of kind `pass` (workspace_pass()) on an arena.
  Workspace(WorkspaceArena<Space>* arena, int pass) : arena_(arena), exceptions_(std::uncaught_exceptions()) {
    arena_->begin_call(pass);
  }
  // One per call, made where it is returned (C++17 elides the copy): never copied or moved.
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;
  /// The call is over: an arena keeps its buffers for the next one, unless the call failed to
  /// allocate or is unwinding with an exception.
  ~Workspace() {
    if (arena_) arena_->end_call(failure_code_ != RFA_SUCCESS || std::uncaught_exceptions() > exceptions_);
  }

  template <class T>
  SpaceTensor4<T, Space> tensor4(const char* name, std::int64_t a, std::int64_t b, std::int64_t c, std::int64_t d) {
    return carve<SpaceTensor4<T, Space>>(name, a, b, c, d);
  }
  template <class T>
  SpaceTensor3<T, Space> tensor3(const char* name, std::int64_t a, std::int64_t b, std::int64_t c) {
    return carve<SpaceTensor3<T, Space>>(name, a, b, c);
  }
  /// A 1-d buffer (staging for exchanges).
  template <class T>
  Kokkos::View<T*, Space> buffer(const char* name, std::int64_t n) {
    return carve<Kokkos::View<T*, Space>>(name, n);
  }

  /// Buffers a kernel keeps for itself (kernels::ForwardWorkspace, BackwardWorkspace), counted and failed as if
  /// they were this workspace's own: `allocate` makes them (throwing rfa::Error when refused),
  /// `bytes` is what they hold. A refusal is kept for throw_if_failed(); nothing is attempted
  /// after an earlier failure.
  template <class Allocate>
  void adopt(std::int64_t bytes, Allocate&& allocate) {
    bytes_ += bytes;
    if (failure_code_ != RFA_SUCCESS) return;
    try {
      allocate();
    } catch (const Error& e) {
      failure_code_ = e.code();
      failure_ = e.what();
    }
  }

  /// Bytes asked for so far, including any that could not be allocated.
  std::int64_t bytes() const { return bytes_; }

  /// Throws the first allocation failure of this workspace (RFA_ERROR_OUT_OF_MEMORY, or
  /// RFA_ERROR_UNSUPPORTED for a shape a View cannot index), with the total it asked for.
  void throw_if_failed() const {
    if (failure_code_ == RFA_SUCCESS) return;
    fail(failure_code_, failure_, "; this call's buffers need ", describe_bytes(bytes_), " in all on this rank");
  }

 private:
  template <class View, class... Extents>
  View carve(const char* name, Extents... extents) {
    using T = typename View::non_const_value_type;
    try {
      const std::int64_t n = checked_bytes(name, std::int64_t(sizeof(T)), extents...);
      bytes_ += n;
      if (failure_code_ != RFA_SUCCESS) return View();
      if constexpr (View::rank >= 3) require_view_extents(name, {extents...});
      if (cache_) return View(static_cast<T*>(cache_->bytes(name, n)), std::size_t(extents)...);
      if (arena_) return View(reinterpret_cast<T*>(arena_->take(name, n)), std::size_t(extents)...);
      owned_.push_back(allocate_bytes<Space>(name, n));
      return view_over<View>(owned_.back(), extents...);
    } catch (const Error& e) {
      if (failure_code_ == RFA_SUCCESS) {
        failure_code_ = e.code();
        failure_ = e.what();
      }
      return View();
    }
  }

  WorkspaceCache<Space>* cache_ = nullptr;
  WorkspaceArena<Space>* arena_ = nullptr;
  int exceptions_ = 0;  // std::uncaught_exceptions() when the call began
  std::vector<Kokkos::View<unsigned char*, Space>> owned_;
  std::int64_t bytes_ = 0;
  rfa_result_t failure_code_ = RFA_SUCCESS;
  std::string failure_;
};

/// Keeps outstanding exchanges moving while a kernel runs (kernels::ProgressHook). An error
/// seen while polling is kept and rethrown by rethrow_if_failed(), outside the kernel.
class ExchangePoller {
 public:
  void watch(comm::Exchange* a, comm::Exchange* b = nullptr, comm::Exchange* c = nullptr, comm::Exchange* d = nullptr) {
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

/// Where an fp32 sum of a result accumulates: the caller's tensor when it is fp32 already,
/// else `ws`'s of the shape the config gives (the caller's extents are checked later, when the
/// ranks agree to run).
template <class Space, class T>
SpaceTensor4<float, Space> fp32_sum(Workspace<Space>& ws, const char* name, const SpaceTensor4<T, Space>& caller,
                                    std::int64_t a, std::int64_t b, std::int64_t c, std::int64_t d) {
  if constexpr (std::is_same<T, float>::value) {
    return caller;
  } else {
    return ws.template tensor4<float>(name, a, b, c, d);
  }
}

}  // namespace engine
}  // namespace rfa
