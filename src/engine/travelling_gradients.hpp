// SPDX-License-Identifier: BSD-3-Clause
// The backward's dK/dV partials as they travel around the ring, one step behind the K/V blocks
// (travelling_kv.hpp): a block's partial starts at the rank of the pass's second step (nobody
// before it has seen the block), each later rank computes its contribution apart while the
// partial from upstream still arrives, adds the two and sends the sum on; after the last step
// the partial goes straight home, where the owner adds it to its own step-0 contribution. P - 1
// hops per block (fewer where steps are jumped over), none waiting for the first step's compute.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "comm/communicator.hpp"
#include "engine/attention_config.hpp"
#include "engine/workspace.hpp"

namespace rfa {
namespace engine {

/// `Compute` is the backend (docs/architecture.md §8): its fill and add run on its memory space.
template <class Compute>
class TravellingGradients {
 public:
  using Grad = typename Compute::template Tensor4<float>;
  using Space = typename Compute::memory_space;

  /// dk_home and dv_home receive the gradient of this rank's own block (the caller's fp32
  /// tensors, or fp32 workspace for 16-bit ones); they are zeroed here. The travelling buffers
  /// come from `ws`: two partials (in turn the one this step adds to and sends on, and the one
  /// arriving) for a pass of two steps or more, and a contribution buffer from the third step on.
  /// `steps` (ring distances, ascending, from 0) must outlive this.
  TravellingGradients(Compute& blocks, Workspace<Space>& ws, comm::Communicator& comm, const AttentionConfig& c,
                      std::int64_t local_seq, Grad dk_home, Grad dv_home, bool communicate,
                      const std::vector<int>& steps)
      : blocks_(blocks),
        comm_(comm),
        dk_home_(dk_home),
        dv_home_(dv_home),
        communicate_(communicate),
        steps_(steps),
        k_bytes_(std::size_t(c.batch * local_seq * c.kv_heads * c.head_dim) * sizeof(float)),
        v_bytes_(std::size_t(c.batch * local_seq * c.kv_heads * c.dv()) * sizeof(float)) {
    const std::int64_t B = c.batch, L = local_seq, HKV = c.kv_heads, D = c.head_dim, DV = c.dv();
    if (steps.size() > 1) {
      dk_part_[0] = ws.template tensor4<float>("rfa::dk_part0", B, L, HKV, D);
      dv_part_[0] = ws.template tensor4<float>("rfa::dv_part0", B, L, HKV, DV);
      dk_part_[1] = ws.template tensor4<float>("rfa::dk_part1", B, L, HKV, D);
      dv_part_[1] = ws.template tensor4<float>("rfa::dv_part1", B, L, HKV, DV);
    }
    if (steps.size() > 2) {
      dk_step_ = ws.template tensor4<float>("rfa::dk_step", B, L, HKV, D);
      dv_step_ = ws.template tensor4<float>("rfa::dv_step", B, L, HKV, DV);
    }
  }

  /// Zeroes the home gradient; with nothing to arrive (the benchmark's compute-only schedule),
  /// the partials too, so uninitialized memory (denormals, NaNs) cannot skew its timing. Call
  /// once the workspace is known to be allocated.
  void zero() {
    blocks_.fill(dk_home_, 0.0f);
    blocks_.fill(dv_home_, 0.0f);
    if (!communicate_ && steps_.size() > 1) {
      blocks_.fill(dk_part_[0], 0.0f);
      blocks_.fill(dv_part_[0], 0.0f);
    }
  }

  /// Step i begins: the held block's partial is the home gradient at step 0, starts here at
  /// zero at step 1, and is the one that arrived from the previous holder later.
  void begin(std::size_t i) {
    i_ = i;
    apart_ = false;
    held_ = false;
    dk_block_ = i == 0 ? dk_home_ : dk_part_[i % 2];
    dv_block_ = i == 0 ? dv_home_ : dv_part_[i % 2];
    if (i == 1) {
      blocks_.fill(dk_block_, 0.0f);
      blocks_.fill(dv_block_, 0.0f);
    }
  }

  /// Where this step's kernel adds its dK and dV: the partial itself where nothing is arriving
  /// for it (steps 0 and 1), else a zeroed buffer of its own, added by add_contribution() once
  /// the partial from upstream is in.
  std::pair<Grad, Grad> contribution() {
    const auto into = contribution_written_over();
    if (apart_) {
      blocks_.fill(dk_step_, 0.0f);
      blocks_.fill(dv_step_, 0.0f);
    }
    return into;
  }

  /// Whether this step's contribution is computed apart from the held block's partial, which is
  /// still arriving (from the third step on): where the backend may hold it instead
  /// (hold_in_backend()).
  bool arriving() const { return i_ > 1; }

  /// contribution() for a backend that writes a step's dK and dV over their buffer
  /// (Compute::kStoresKeyGradients, its backward_storing_key_gradients()): the buffer of a step
  /// from the third on is not zeroed first. The partial of steps 0 and 1 still is (a step the
  /// mask hides computes nothing into it).
  std::pair<Grad, Grad> contribution_written_over() {
    if (!arriving()) return {dk_block_, dv_block_};
    apart_ = true;
    return {dk_step_, dv_step_};
  }

  /// Instead of contribution(), where arriving(): the backend keeps this step's contribution
  /// itself (Compute::kHoldsKeyGradients, its backward_holding_key_gradients()) until
  /// add_contribution() adds it to the partial that arrived.
  void hold_in_backend() {
    apart_ = true;
    held_ = true;
  }

  /// Waits for the partial arriving for the next step's block (sent by send_on()).
  void wait_arrival() {
    if (!communicate_) return;
    send_k_.wait();
    send_v_.wait();
  }

  /// Adds this step's contribution, if it was computed apart, to the held block's partial.
  void add_contribution() {
    if (!apart_) return;
    if constexpr (Compute::kHoldsKeyGradients) {
      if (held_) {
        blocks_.add_held_key_gradients(dk_block_, dv_block_);
        return;
      }
    }
    blocks_.add(dk_block_, dk_step_);
    blocks_.add(dv_block_, dv_step_);
  }

  /// From the second step on, the held block's partial goes to the rank of the next step, after
  /// the last step to the block's owner. Returns the bytes put on the wire.
  std::int64_t send_on() {
    if (!communicate_ || i_ < 1) return 0;
    const std::size_t n = steps_.size();
    const int s = steps_[i_], P = comm_.size();
    const int hops = i_ + 1 < n ? steps_[i_ + 1] - s : P - s;
    send_k_ = comm_.start_shift_exchange(dk_block_.data(), dk_part_[(i_ + 1) % 2].data(), k_bytes_, hops);
    send_v_ = comm_.start_shift_exchange(dv_block_.data(), dv_part_[(i_ + 1) % 2].data(), v_bytes_, hops);
    return std::int64_t(k_bytes_ + v_bytes_);
  }

  /// After the last step (and wait_arrival()): adds what the other ranks summed for this rank's
  /// block, delivered by the last exchange, to the home gradient.
  void add_home() {
    const std::size_t n = steps_.size();
    if (n < 2) return;
    blocks_.add(dk_home_, dk_part_[n % 2]);
    blocks_.add(dv_home_, dv_part_[n % 2]);
  }

  comm::Exchange* pending_k() { return &send_k_; }
  comm::Exchange* pending_v() { return &send_v_; }

 private:
  Compute& blocks_;
  comm::Communicator& comm_;
  Grad dk_home_, dv_home_;
  Grad dk_part_[2], dv_part_[2], dk_step_, dv_step_;
  Grad dk_block_, dv_block_;  // the held block's partial at the current step
  comm::Exchange send_k_, send_v_;
  bool communicate_;
  const std::vector<int>& steps_;
  std::size_t k_bytes_, v_bytes_;
  std::size_t i_ = 0;
  bool apart_ = false;  // this step's contribution is added once the partial is in
  bool held_ = false;   // and the backend holds it
};

}  // namespace engine
}  // namespace rfa
