// SPDX-License-Identifier: BSD-3-Clause
// The needed-only exchange (docs/strategies.md): each rank receives exactly the K/V rows its
// queries see, straight from the rank that holds them, instead of every block travelling the
// whole ring. For a mask where each rank sees few others (a neighbourhood on a grid, a narrow
// window, short documents) it moves what a halo exchange moves.
//
// The plan (engine/needed_kv_plan.hpp) is made at construction from the agreed config alone:
// for each distance s at which some rank's queries see keys of the rank s positions upstream,
// one round in which every rank sends the rank s downstream the rows of its own that that rank
// sees and receives from the rank s upstream the rows it sees there (an uneven shift exchange:
// one partner each way, sizes of their own). A round's rows arrive grouped into pieces of at
// most PositionMap::kMaxSegments position segments, one kernel call each, merged into the
// running output by the online softmax like the ring's blocks. The next round's rows travel
// while a round computes (the kernels poll the exchange between tiles). The backward sends the
// same rows again and returns each piece's fp32 dK/dV to its owner, where they are added in
// two rounds later (or at the end), so that they too travel under compute.
//
// Memory per rank (workspace_bytes(); E = element size, kvw = B*Hkv*(D + DV) the values of one
// K and one V row, Rin and Rout the most rows one round receives and sends (each at most L),
// n = min(2, rounds) the rounds whose buffers are held at once, o = B*L*H*DV,
// g = B*L*H*D + B*L*Hkv*(D + DV); accumulators only for 16-bit callers, scratch only where some
// round exists):
//   forward:  n*E*(Rin + Rout)*kvw + 4*(o acc + o + B*H*L block scratch) + kernel buffers
//   backward: n*E*(Rin + Rout)*kvw + n*4*(Rin + Rout)*kvw dK/dV pieces + 4*B*H*L D
//             + 4*g accumulators + kernel buffers
// Host contexts only.
#pragma once

#include <cstdint>
#include <vector>

#include "comm/communicator.hpp"
#include "engine/attention_config.hpp"
#include "engine/engine_state.hpp"
#include "engine/needed_kv_plan.hpp"
#include "engine/pass_tensors.hpp"

namespace rfa {
namespace engine {

class NeededKvAttention : public EngineState {
 public:
  /// Collective over `comm`: validates the config on every rank (as the ring does; host
  /// contexts only) and that all ranks agree, then makes the plan (no communication).
  NeededKvAttention(comm::Communicator& comm, const AttentionConfig& config);

  PositionMap local_positions() const;
  /// The rounds this rank runs (the same distances on every rank).
  const std::vector<NeededRound>& rounds() const { return rounds_; }

  /// Collective. Same tensors as RingAttention::forward, in host memory: device tensors are
  /// refused with RFA_ERROR_UNSUPPORTED (validate_strategy refuses CUDA contexts already).
  void forward(const AnyForwardTensors& tensors);

  /// Collective. Same tensors as RingAttention::backward, in host memory.
  void backward(const AnyBackwardTensors& tensors);

  // last_timings(): compute (kernels, merges, packing), wait (in the exchanges), bytes_sent.
  /// The formula in the file comment.
  std::int64_t workspace_bytes(bool backward) const;
  /// What the kernels' buffers take in a pass: each as large as the call that needs it most.
  std::int64_t kernel_workspace_bytes(bool backward) const;

 private:
  /// The passes, on host tensors.
  template <class T>
  void run_forward(const HostForward<T>& tensors);
  template <class T>
  void run_backward(const HostBackward<T>& tensors);
  /// Runs `run` on the tensors of a host pass; refuses a device pass.
  template <class AnyTensors, class Run>
  void on_host(const AnyTensors& tensors, Run&& run);

  /// The most rows a round receives, and sends.
  std::int64_t rows_in() const;
  std::int64_t rows_out() const;

  /// Rounds whose buffers a pass holds at once: two (one computing, the next travelling), or
  /// one or none where there are fewer rounds.
  int buffered_rounds() const { return rounds_.size() < 2 ? int(rounds_.size()) : 2; }
  /// Packs round i's rows of k and v into `send` and starts sending them to its `to` while its
  /// `from`'s arrive in `received`.
  template <class T>
  comm::Exchange start_kv(std::size_t i, Tensor4<const T> k, Tensor4<const T> v, T* send, T* received);

  std::vector<NeededRound> rounds_;
  /// Where each round's rows sent sit in its packed buffers (made once: a pass allocates nothing
  /// beyond its workspace once the ranks agreed to go on).
  std::vector<PackedRows> sent_;
  /// The params of every kernel call of a pass, in the order the passes make them: the local
  /// block, then each round's pieces (made once, pointing into config_).
  std::vector<kernels::AttentionParams> calls_;
};

}  // namespace engine
}  // namespace rfa
