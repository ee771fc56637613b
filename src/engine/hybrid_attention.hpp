// SPDX-License-Identifier: BSD-3-Clause
// The hybrid Ulysses x ring grid (docs/architecture.md §8), and Ulysses as its one-group case:
// P = Pu x Pr ranks. Ring position p is in Ulysses group j = p / Pu (Pu consecutive positions:
// the ranks of one node in topology order) at place u = p % Pu. An all-to-all inside the group
// gives each rank the group's rows for H/Pu heads; the ring engine then runs on those heads
// over the Pr groups (the ranks with the same u), and a second all-to-all brings out and lse
// back. The backward mirrors it; the ring returns dQ, dK and dV in fp32, and dK/dV are summed
// in fp32 over the ranks that shared a K/V head (GQA/MQA with kv_heads < Pu).
//
// Which rows a rank holds: with several ring groups the layout applies at the group level
// (group j holds the rows the layout gives position j of Pr) and the group's Pu ranks split
// them in order (rank u holds the u-th of Pu equal slices). With one group (Pu = P: Ulysses)
// the layout applies over all P ranks, and the ring of one holds the whole sequence in global
// order: its one step is a single attention over the sequence on H/P heads, written straight
// into the head-sharded out (engine/ring_attention.hpp, one-step passes).
//
// Memory per rank (workspace_bytes()): the ring's (engine/ring_attention.hpp, for H/Pu heads
// and the group's K/V slots on S/Pr rows, fp32 gradients) plus, with E = element size, D and DV
// the head dims of Q/K and of V/out/dO, W = max(D, DV), q = B*(S/P)*H*D, o = B*(S/P)*H*DV,
// w = B*(S/P)*H*W, kvs = B*(S/Pr)*slots*(D + DV) (K and V), kv = B*(S/P)*kv_heads*(D + DV),
// rows = B*H*(S/P):
//   forward:  E*(2w staging + q Q + kvs K/V + o out) + 4*3*rows (lse, two lse staging)
//   backward: E*(2w staging + q Q + 2o out/dO + kvs K/V)
//             + 4*(q dQ + kvs dK/dV + 2g dK/dV staging + kv dK/dV results + 3*rows lse and
//             its staging), g the larger of what a rank sends and receives of dK or dV in W
//             (engine/head_exchange.hpp key_staging_elems()).
#pragma once

#include <cstdint>
#include <exception>
#include <memory>
#include <vector>

#include "comm/communicator.hpp"
#include "engine/attention_config.hpp"
#include "engine/attention_strategy.hpp"
#include "engine/engine_state.hpp"
#include "engine/head_exchange.hpp"
#include "engine/head_routing.hpp"
#include "engine/ring_attention.hpp"
#include "engine/workspace.hpp"

namespace rfa {
namespace engine {

class HybridAttention : public EngineState {
 public:
  /// Collective over `comm`: checks that all ranks agree and that the grid of `choice` fits
  /// (validate_strategy(): the hybrid's Pu x P/Pu, or Ulysses' P x 1), then splits `comm` into
  /// the groups and the ring of groups.
  HybridAttention(comm::Communicator& comm, const AttentionConfig& config, const StrategyChoice& choice);
  /// Waits for work still queued on the CUDA stream before the device workspace is freed.
  ~HybridAttention();

  int ulysses_degree() const { return degree_; }
  PositionMap local_positions() const;

  /// Collective. Same tensors, in either memory space, as RingAttention::forward. On device
  /// memory the all-to-alls go through a communicator that accepts device memory, the packing
  /// and the ring's kernels are queued on the CUDA stream (set_cuda_stream), and the call
  /// returns once everything is queued.
  void forward(const AnyForwardTensors& tensors);

  /// Collective. Same tensors as RingAttention::backward.
  void backward(const AnyBackwardTensors& tensors);

  /// The stream of the device passes (EngineState), the inner ring's too.
  void set_cuda_stream(void* stream);
  /// The workspace kept between calls (EngineState): one host arena with the inner ring's
  /// buffers in it, and each engine's device cache.
  std::int64_t held_workspace_bytes() const {
    return EngineState::held_workspace_bytes() + ring_->held_workspace_bytes();
  }
  void release_workspace() {
    std::exception_ptr ring_error;  // a CUDA error there still lets this engine's memory go
    try {
      ring_->release_workspace();
    } catch (...) {
      ring_error = std::current_exception();
    }
    EngineState::release_workspace();
    if (ring_error) std::rethrow_exception(ring_error);
  }

  /// Timings (last_timings()): compute and steps the ring's; wait the ring's plus the
  /// all-to-alls; bytes both.
  std::int64_t workspace_bytes(bool backward) const;
  /// What the ring's kernels allocate for themselves during one pass, part of workspace_bytes().
  std::int64_t kernel_workspace_bytes(bool backward) const { return ring_->kernel_workspace_bytes(backward); }

 private:
  /// The rows of each rank of this group, as indices into the group's rows (the ring's local
  /// order; global positions with one group).
  std::vector<PositionMap> group_slices() const;
  void add_ring_timings();

  /// The passes, written once over the memory space of the tensors (host or CUDA device).
  template <class T, class Space>
  void run_forward(const ForwardTensors<T, Space>& tensors);
  template <class T, class Space>
  void run_backward(const StorageGradients<T, Space>& tensors);
  /// The execution space instance a pass in memory `Space` queues its packing on (a device
  /// pass's: the context's stream, which the group's collectives then follow).
  template <class Space>
  typename Space::execution_space pass_exec();
  /// This rank's group exchange over memory `Space` (made at construction).
  template <class Space>
  HeadExchange<Space>& exchange();
  /// A workspace for one pass of kind `pass` (workspace_pass()): the host arena's buffers, or
  /// the device buffers kept in the cache.
  template <class Space>
  Workspace<Space> workspace(int pass);

  int degree_;
  HeadRouting routing_;
  std::unique_ptr<comm::Communicator> group_;  ///< the Pu ranks of this Ulysses group
  std::unique_ptr<comm::Communicator> rings_;  ///< the Pr ranks with this rank's place u
  std::unique_ptr<RingAttention> ring_;
  std::unique_ptr<HeadExchange<Kokkos::HostSpace>> host_exchange_;
#if RFA_ENGINE_CUDA
  std::unique_ptr<HeadExchange<Kokkos::CudaSpace>> device_exchange_;
  StreamExec device_exec_;
#endif
};

}  // namespace engine
}  // namespace rfa
