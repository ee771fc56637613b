// SPDX-License-Identifier: BSD-3-Clause
// KV all-gather (Llama 3's context parallelism, docs/architecture.md §8): every rank keeps its
// queries and gathers K and V of the whole sequence, one chunk of K/V heads at a time, then
// attends to them with its own queries. The gather of chunk c+1 is in flight (polled between
// tiles) while chunk c is computed, and only two chunks are ever held, so peak memory is set by
// the chunk size, not by kv_heads. The backward gathers K/V the same way and returns each
// chunk's dK/dV with a reduce-scatter in fp32.
//
// Memory per rank (workspace_bytes(); E = element size, c = kv_heads_per_chunk, g = heads /
// kv_heads, k = B*(S/P)*c*D one local chunk, K = P*k = B*S*c*D one gathered chunk,
// qc = B*(S/P)*c*g*D the chunk's queries, r = B*(S/P)*c*g its rows):
//   forward:  E*(4k send + 4K gathered + 2K placed + 2qc Q/out chunk) + 4*r lse chunk
//   backward: E*(4k + 4K + 2K + 2qc Q/dO chunk) + 4*(2r lse/D chunk + B*H*(S/P) D
//             + qc dQ chunk + 2K dK/dV + K reduce-scatter input + k its output)
#pragma once

#include <cstdint>
#include <vector>

#include "comm/communicator.hpp"
#include "engine/ring_attention.hpp"
#include "engine/ring_config.hpp"

namespace rfa {
namespace engine {

class AllGatherAttention {
 public:
  /// Collective over `comm`: validates the config on every rank (as the ring does, and that
  /// kv_heads_per_chunk divides kv_heads) and that all ranks agree.
  AllGatherAttention(comm::Communicator& comm, const RingConfig& config, std::int64_t kv_heads_per_chunk = 1);

  const RingConfig& config() const { return config_; }
  int position() const { return comm_.rank(); }
  int ranks() const { return comm_.size(); }
  std::int64_t local_seq() const { return local_seq_; }
  PositionMap local_positions() const;
  std::int64_t kv_heads_per_chunk() const { return chunk_; }

  /// Collective. Same tensors as RingAttention::forward.
  template <class T>
  void forward(Tensor4<const T> q, Tensor4<const T> k, Tensor4<const T> v, Tensor4<T> out, Tensor3<float> lse);

  /// Collective. Same tensors as RingAttention::backward.
  template <class T>
  void backward(Tensor4<const T> q, Tensor4<const T> k, Tensor4<const T> v, Tensor4<const T> out, Tensor4<const T> dout,
                Tensor3<const float> lse, Tensor4<T> dq, Tensor4<T> dk, Tensor4<T> dv);

  /// total, compute (kernels), wait (blocked on a gather or in the reduce-scatter), bytes_sent.
  const RingTimings& last_timings() const { return timings_; }
  /// The formula in the file comment.
  std::int64_t workspace_bytes(bool backward) const;
  /// What the kernels allocate for themselves during one pass (kernels/flash_attention.hpp:
  /// packing for AMX tiles; 0 elsewhere), part of workspace_bytes().
  std::int64_t kernel_workspace_bytes(bool backward) const;
  std::int64_t last_workspace_bytes() const { return last_workspace_bytes_; }

 private:
  kernels::AttentionParams chunk_params() const;

  comm::Communicator& comm_;
  RingConfig config_;
  std::int64_t chunk_;
  std::int64_t local_seq_ = 0;
  RingTimings timings_;
  std::int64_t last_workspace_bytes_ = 0;
};

}  // namespace engine
}  // namespace rfa
