// SPDX-License-Identifier: BSD-3-Clause
// KV all-gather (Llama 3's context parallelism, docs/architecture.md §8): every rank keeps its
// queries and gathers K and V of the whole sequence, one chunk of K/V heads at a time, then
// attends to them with its own queries. The gather of chunk c+1 is in flight (polled between
// tiles) while chunk c is computed, and only two chunks are ever held, so peak memory is set by
// the chunk size, not by kv_heads. The backward gathers K/V the same way and returns each
// chunk's dK/dV with a reduce-scatter in fp32. On a CUDA context the same schedule runs on
// device memory with rfa's CUDA kernels (the chunk's gather then runs on the communicator's
// stream while the previous chunk computes).
//
// Memory per rank: workspace_bytes(), the buffers of allgather_buffer_bytes
// (allgather_chunk_rule.hpp, which gives the formula) and the host kernels' own workspace.
#pragma once

#include <cstdint>
#include <vector>

#include "comm/communicator.hpp"
#include "engine/allgather_chunk.hpp"
#include "engine/attention_config.hpp"
#include "engine/block_compute_cuda.hpp"
#include "engine/block_compute_host.hpp"
#include "engine/engine_state.hpp"
#include "engine/ring_attention.hpp"
#include "engine/sequence_transpose.hpp"
#include "engine/workspace.hpp"

namespace rfa {
namespace engine {

class AllGatherAttention : public EngineState {
 public:
  /// Collective over `comm`: validates the config on every rank (as the ring does, and that
  /// kv_heads_per_chunk divides kv_heads) and that all ranks agree.
  AllGatherAttention(comm::Communicator& comm, const AttentionConfig& config, std::int64_t kv_heads_per_chunk = 1);
  /// Waits for work still queued on the CUDA stream before the device workspace is freed.
  ~AllGatherAttention();

  PositionMap local_positions() const;
  std::int64_t kv_heads_per_chunk() const { return chunk_; }

  /// Collective. Same tensors, in either memory space, as RingAttention::forward. On device
  /// memory the gathers and reduce-scatters go through a communicator that accepts device
  /// memory, the packing and rfa's CUDA kernels are queued on the CUDA stream
  /// (set_cuda_stream), and the call returns once everything is queued.
  void forward(const AnyForwardTensors& tensors);

  /// Collective. Same tensors as RingAttention::backward.
  void backward(const AnyBackwardTensors& tensors);

  // last_timings(): compute (kernels), wait (blocked on a gather or in the reduce-scatter).
  /// allgather_buffer_bytes (allgather_chunk_rule.hpp) plus kernel_workspace_bytes.
  std::int64_t workspace_bytes(bool backward) const;
  /// What the kernels allocate for themselves during one pass (kernels/flash_attention.hpp:
  /// packing for AMX tiles; 0 elsewhere), part of workspace_bytes().
  std::int64_t kernel_workspace_bytes(bool backward) const;

 private:
  kernels::AttentionParams chunk_params() const;
  std::vector<PositionMap> all_positions() const;
  /// The one dispatch on the memory space: runs `run` with the block compute of `Space`
  /// (HostBlockCompute, or CudaBlockCompute on the stream) and the execution space instance the
  /// pass's packing is queued on.
  template <class Space, class Run>
  void with_block_compute(Run&& run);
  /// The identity columns of one chunk in memory `Space` (made at construction).
  template <class Space>
  const ColumnMap<Space>& identity() const;

  /// The passes, written once over the "compute one block" seam (HostBlockCompute or
  /// CudaBlockCompute: its memory space, execution space and kernels).
  template <class Compute, class Exec, class T>
  void run_forward(Compute& blocks, const Exec& exec, const ForwardTensors<T, typename Compute::memory_space>& tensors);
  template <class Compute, class Exec, class T>
  void run_backward(Compute& blocks, const Exec& exec,
                    const StorageGradients<T, typename Compute::memory_space>& tensors);

  std::int64_t chunk_;
  ColumnMap<Kokkos::HostSpace> host_identity_;
#if RFA_ENGINE_CUDA
  ColumnMap<Kokkos::CudaSpace> device_identity_;
  StreamExec device_exec_;
  DeviceMaskData device_mask_;  ///< config_'s documents and ranges for the kernels
#endif
};

}  // namespace engine
}  // namespace rfa
