// SPDX-License-Identifier: BSD-3-Clause
// The needed-only exchange (docs/strategies.md): each rank receives exactly the K/V rows its
// queries see, straight from the rank that holds them, instead of every block travelling the
// whole ring. For a mask where each rank sees few others (a neighbourhood on a grid, a narrow
// window, short documents) it moves what a halo exchange moves.
//
// The plan (engine/needed_kv_plan.hpp) is made at construction from the agreed config alone:
// for each distance s at which some rank's queries see keys of the rank s positions upstream,
// one round in which every rank sends the rank s downstream the rows of its own that that rank
// sees and receives from the rank s upstream the rows it sees there (an alltoallv with one
// partner each way). A round's rows arrive grouped into pieces of at most
// PositionMap::kMaxSegments position segments, one kernel call each, merged into the running
// output by the online softmax like the ring's blocks. The backward sends the same rows again
// and returns each piece's fp32 dK/dV to its owner in the round's reverse alltoallv, where they
// are added into the owner's gradients. Rounds are computed one after the other; a round's
// exchange does not overlap the previous round's compute.
//
// Memory per rank (workspace_bytes(); E = element size, kvw = B*Hkv*(D + DV) the values of one
// K and one V row, Rin and Rout the most rows one round receives and sends (each at most L),
// o = B*L*H*DV, g = B*L*H*D + B*L*Hkv*(D + DV); accumulators only for 16-bit callers, scratch
// only where some round exists):
//   forward:  E*(Rin + Rout)*kvw + 4*(o acc + o + B*H*L block scratch) + kernel buffers
//   backward: E*(Rin + Rout)*kvw + 4*(Rin + Rout)*kvw dK/dV pieces + 4*B*H*L D
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

  /// Collective. Same tensors as RingAttention::forward.
  template <class T>
  void forward(Tensor4<const T> q, Tensor4<const T> k, Tensor4<const T> v, Tensor4<T> out, Tensor3<float> lse);

  /// Collective. Same tensors as RingAttention::backward.
  template <class T>
  void backward(Tensor4<const T> q, Tensor4<const T> k, Tensor4<const T> v, Tensor4<const T> out, Tensor4<const T> dout,
                Tensor3<const float> lse, Tensor4<T> dq, Tensor4<T> dk, Tensor4<T> dv);

  // last_timings(): compute (kernels, merges, packing), wait (in the exchanges), bytes_sent.
  /// The formula in the file comment.
  std::int64_t workspace_bytes(bool backward) const;
  /// What the kernels' buffers take in a pass: enough for the call that needs the most.
  std::int64_t kernel_workspace_bytes(bool backward) const;

 private:
  kernels::AttentionParams local_params() const;
  kernels::AttentionParams piece_params(const NeededPiece& piece) const;
  /// The call of a pass whose kernel buffers are the largest.
  kernels::AttentionParams largest_params(bool backward) const;
  /// The most rows a round receives, and sends.
  std::int64_t rows_in() const;
  std::int64_t rows_out() const;

  /// Sends round `r`'s rows of k and v to its `to`, and receives its `from`'s into `received`.
  template <class T>
  void exchange_kv(const NeededRound& r, Tensor4<const T> k, Tensor4<const T> v, T* send, T* received);

  std::vector<NeededRound> rounds_;
};

}  // namespace engine
}  // namespace rfa
