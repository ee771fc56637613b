// SPDX-License-Identifier: BSD-3-Clause
// The hybrid Ulysses x ring grid (docs/architecture.md §8): P = Pu x Pr ranks. Ring position p
// is in Ulysses group j = p / Pu (Pu consecutive positions: the ranks of one node in topology
// order) at place u = p % Pu. The layout applies at the group level: group j holds the rows the
// layout gives position j of Pr, and its Pu ranks split them in order (rank u holds the u-th
// of Pu equal slices). An all-to-all inside the group gives each rank the group's rows for H/Pu
// heads; the ring engine then runs on those heads over the Pr groups (the ranks with the same
// u), and a second all-to-all brings out and lse back. The backward mirrors it; dK/dV come back
// from the ring in the storage dtype and are summed in fp32 over the ranks that shared a K/V
// head (GQA/MQA with kv_heads < Pu), as in Ulysses.
//
// Memory per rank (workspace_bytes()): the ring's (engine/ring_attention.hpp, for H/Pu heads
// and the group's K/V slots on S/Pr rows) plus, with E = element size, q = B*(S/P)*H*D,
// kvs = B*(S/Pr)*slots*D, kv = B*(S/P)*kv_heads*D, rows = B*H*(S/P):
//   forward:  E*(2q staging + q Q + 2kvs K/V + q out) + 4*3*rows (lse, two lse staging)
//   backward: E*(2q staging + 3q Q/out/dO + 2kvs K/V + q dQ + 2kvs dK/dV)
//             + 4*(2g dK/dV staging + 2kv fp32 dK/dV results + 3*rows lse and its staging),
//             g as in Ulysses (engine/head_exchange.hpp key_staging_elems()).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "comm/communicator.hpp"
#include "engine/head_routing.hpp"
#include "engine/ring_attention.hpp"
#include "engine/ring_config.hpp"

namespace rfa {
namespace engine {

class HybridAttention {
 public:
  /// Collective over `comm`: checks that all ranks agree and that the grid fits (Pu divides P
  /// and the heads, the group's rows divide by Pu), then splits `comm` into the groups and the
  /// ring of groups.
  HybridAttention(comm::Communicator& comm, const RingConfig& config, int ulysses_degree);
  ~HybridAttention();

  const RingConfig& config() const { return config_; }
  int position() const { return comm_.rank(); }
  int ranks() const { return comm_.size(); }
  int ulysses_degree() const { return degree_; }
  std::int64_t local_seq() const { return local_seq_; }
  PositionMap local_positions() const;

  /// Collective. Same tensors as RingAttention::forward.
  template <class T>
  void forward(Tensor4<const T> q, Tensor4<const T> k, Tensor4<const T> v, Tensor4<T> out, Tensor3<float> lse);

  /// Collective. Same tensors as RingAttention::backward.
  template <class T>
  void backward(Tensor4<const T> q, Tensor4<const T> k, Tensor4<const T> v, Tensor4<const T> out, Tensor4<const T> dout,
                Tensor3<const float> lse, Tensor4<T> dq, Tensor4<T> dk, Tensor4<T> dv);

  /// compute and steps: the ring's; wait: the ring's plus the all-to-alls; bytes: both.
  const RingTimings& last_timings() const { return timings_; }
  std::int64_t workspace_bytes(bool backward) const;
  /// What the ring's kernels allocate for themselves during one pass, part of workspace_bytes().
  std::int64_t kernel_workspace_bytes(bool backward) const { return ring_->kernel_workspace_bytes(backward); }
  std::int64_t last_workspace_bytes() const { return last_workspace_bytes_; }

 private:
  std::vector<PositionMap> group_slices() const;
  void add_ring_timings();

  comm::Communicator& comm_;
  RingConfig config_;
  int degree_;
  HeadRouting routing_;
  std::unique_ptr<comm::Communicator> group_;  ///< the Pu ranks of this Ulysses group
  std::unique_ptr<comm::Communicator> rings_;  ///< the Pr ranks with this rank's place u
  std::unique_ptr<RingAttention> ring_;
  std::int64_t local_seq_ = 0;
  RingTimings timings_;
  std::int64_t last_workspace_bytes_ = 0;
};

}  // namespace engine
}  // namespace rfa
