// SPDX-License-Identifier: BSD-3-Clause
// Ulysses (DeepSpeed) sequence parallelism (docs/architecture.md §8): input and output stay
// sharded by sequence as for the ring (each rank holds the rows its layout gives it, all
// heads). An all-to-all turns [B][S/P][H][D] into [B][S][H/P][D], with every received row placed
// at its global position; each rank runs one full-sequence attention on its heads with the host
// kernels; a second all-to-all brings out and lse back to the sequence shards. The backward
// mirrors it: q, k, v, out, dout and lse go to heads, one local backward, dQ comes back in the
// storage dtype and dK/dV in fp32, summed over the ranks that shared a K/V head.
//
// Heads must divide by P; with GQA/MQA each rank receives only the K/V heads its query heads
// read (engine/head_routing.hpp).
//
// Memory per rank (workspace_bytes(); E = element size, q = B*(S/P)*H*D = B*S*(H/P)*D,
// kvs = B*S*slots*D, rows = B*H*(S/P)):
//   forward:  E*(2q staging + q Q + 2kvs K/V + q out) + 4*3*rows (lse, two lse staging)
//   backward: E*(2q staging + 3q Q/out/dO + 2kvs K/V)
//             + 4*(q dQ + 2kvs dK/dV + 2g dK/dV staging + 2kv fp32 dK/dV results + 4*rows for
//             lse, D and two lse staging), kv = B*(S/P)*kv_heads*D, g = the larger of
//             B*S*kv_count(me)*D and B*(S/P)*sum_r kv_count(r)*D.
// All of it grows with S/P, like the ring's, but the constants are larger (the full sequence
// of H/P heads is held at once).
#pragma once

#include <cstdint>
#include <vector>

#include "comm/communicator.hpp"
#include "engine/head_routing.hpp"
#include "engine/ring_attention.hpp"
#include "engine/ring_config.hpp"

namespace rfa {
namespace engine {

class UlyssesAttention {
 public:
  /// Collective over `comm`: validates the config on every rank (as the ring does, and that
  /// heads divide by P) and that all ranks agree.
  UlyssesAttention(comm::Communicator& comm, const RingConfig& config);

  const RingConfig& config() const { return config_; }
  int position() const { return comm_.rank(); }
  int ranks() const { return comm_.size(); }
  std::int64_t local_seq() const { return local_seq_; }
  PositionMap local_positions() const;
  const HeadRouting& routing() const { return routing_; }

  /// Collective. Same tensors as RingAttention::forward.
  template <class T>
  void forward(Tensor4<const T> q, Tensor4<const T> k, Tensor4<const T> v, Tensor4<T> out, Tensor3<float> lse);

  /// Collective. Same tensors as RingAttention::backward.
  template <class T>
  void backward(Tensor4<const T> q, Tensor4<const T> k, Tensor4<const T> v, Tensor4<const T> out, Tensor4<const T> dout,
                Tensor3<const float> lse, Tensor4<T> dq, Tensor4<T> dk, Tensor4<T> dv);

  /// total, compute (the local kernels), wait (inside the all-to-alls and the packing around
  /// them), bytes_sent (to other ranks).
  const RingTimings& last_timings() const { return timings_; }
  /// The formula in the file comment.
  std::int64_t workspace_bytes(bool backward) const;
  /// What the kernels allocate for themselves during one pass (kernels/flash_attention.hpp:
  /// packing for AMX tiles; 0 elsewhere), part of workspace_bytes().
  std::int64_t kernel_workspace_bytes(bool backward) const;
  std::int64_t last_workspace_bytes() const { return last_workspace_bytes_; }

 private:
  std::vector<PositionMap> all_positions() const;
  kernels::AttentionParams local_params() const;
  std::int64_t grad_staging_elems() const;

  comm::Communicator& comm_;
  RingConfig config_;
  HeadRouting routing_;
  std::int64_t local_seq_ = 0;
  RingTimings timings_;
  std::int64_t last_workspace_bytes_ = 0;
};

}  // namespace engine
}  // namespace rfa
