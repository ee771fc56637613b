// SPDX-License-Identifier: BSD-3-Clause
// What every strategy engine holds and reports alike (docs/architecture.md §8): the
// communicator it was built on, the agreed problem, this rank's rows, the timings and workspace
// of its last pass, the buffers it keeps between calls, and the CUDA stream its device passes
// queue on. The ring, the KV all-gather and the hybrid (Ulysses is its one-group grid) derive
// from it; AttentionStrategy reports it.
#pragma once

#include <cstdint>

#include "comm/agreement.hpp"
#include "comm/communicator.hpp"
#include "engine/attention_config.hpp"
#include "engine/engine_backends.hpp"
#include "engine/pass_timings.hpp"
#include "engine/workspace.hpp"

namespace rfa {
namespace engine {

class EngineState {
 public:
  /// The problem, as every rank agreed on it.
  const AttentionConfig& config() const { return config_; }
  /// This rank's position on the communicator the engine was built on, and the number of ranks.
  int position() const { return comm_.rank(); }
  int ranks() const { return comm_.size(); }
  /// Rows of the sequence this rank holds.
  std::int64_t local_seq() const { return local_seq_; }
  /// Timings and bytes sent of the last forward or backward on this rank.
  const PassTimings& last_timings() const { return timings_; }
  /// Bytes of engine workspace allocated by the last forward or backward (measured).
  std::int64_t last_workspace_bytes() const { return last_workspace_bytes_; }
  /// The cudaStream_t (as void*) device passes queue their work on; nullptr, the default, is
  /// the legacy default stream. The stream must outlive the calls that use it and this state,
  /// whose destruction waits for its last work on it: to destroy the stream first, synchronize
  /// it and set nullptr here.
  void set_cuda_stream(void* stream) { cuda_stream_ = stream; }
  void* cuda_stream() const { return cuda_stream_; }
  /// Bytes of workspace kept between calls: the host arena (as large as the largest call so
  /// far) and, on a CUDA context, the device cache.
  std::int64_t held_workspace_bytes() const;
  /// Frees the workspace kept between calls (a CUDA context first waits for its stream, whose
  /// queued kernels may still use it); the next call allocates afresh. Not collective.
  void release_workspace();
  /// Whether a transport writing into this engine's workspace (its communicator, the hybrid's
  /// groups and inner ring) abandoned transfers: after a failure that leaves them, on this rank
  /// alone or on every rank, the engine's exchanges are out of step for good.
  bool transfers_abandoned() const {
#if RFA_ENGINE_CUDA
    if (device_cache_.transfers_abandoned()) return true;
#endif
    return host_arena_->transfers_abandoned();
  }
  /// This engine's calls, made only inside calls of `outer` (the hybrid's inner ring), carve
  /// from `outer`'s arena: one block serves both engines and nothing is kept twice.
  void share_host_workspace(EngineState& outer) {
    host_arena_ = outer.host_arena_;
    host_arena_->watch(&comm_);
  }

 protected:
  /// `config` as every rank agreed on it (the engine validates before it comes here).
  EngineState(comm::Communicator& comm, const AttentionConfig& config) : comm_(comm), config_(config) {
    host_workspace_.watch(&comm_);
#if RFA_ENGINE_CUDA
    device_cache_.watch(&comm_);
#endif
  }
  ~EngineState() = default;
  EngineState(const EngineState&) = delete;
  EngineState& operator=(const EngineState&) = delete;

  /// The opening of every pass: the timings reset, and the whole pass timed for as long as the
  /// returned object lives.
  [[nodiscard]] ScopedSeconds begin_pass() {
    timings_ = PassTimings();
    return ScopedSeconds(timings_.total);
  }
  /// Runs `work`, its time counted as compute (kernels, merges, packing) or as waiting
  /// (blocked on an exchange) in the pass's timings.
  template <class Work>
  void computing(Work&& work) {
    ScopedCompute t(timings_);
    work();
  }
  template <class Work>
  void waiting(Work&& work) {
    ScopedSeconds t(timings_.wait);
    work();
  }
  /// The point every pass reaches before anything moves: records the workspace it allocated,
  /// then the ranks agree on `where` that this rank's tensors pass `check_tensors` and its
  /// workspace was granted, or every rank throws together.
  template <class Space, class Checks>
  void agree_to_run(comm::Communicator& where, Workspace<Space>& ws, Checks&& check_tensors) {
    last_workspace_bytes_ = ws.bytes();
    comm::check_everywhere(where, [&] {
      check_tensors();
      ws.throw_if_failed();
    });
  }

  comm::Communicator& comm_;
  AttentionConfig config_;
  std::int64_t local_seq_ = 0;
  PassTimings timings_;
  std::int64_t last_workspace_bytes_ = 0;
  void* cuda_stream_ = nullptr;
  /// The host arena this engine's calls carve from: its own, or that of an engine whose calls
  /// make this one's (share_host_workspace).
  WorkspaceArena<Kokkos::HostSpace>* host_arena() { return host_arena_; }
  WorkspaceArena<Kokkos::HostSpace> host_workspace_;
  WorkspaceArena<Kokkos::HostSpace>* host_arena_ = &host_workspace_;
#if RFA_ENGINE_CUDA
  WorkspaceCache<Kokkos::CudaSpace> device_cache_;
#endif
};

}  // namespace engine
}  // namespace rfa
