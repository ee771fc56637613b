// Exact attention over a sequence split across the ranks of a ring (DESIGN.md §3-§5).
//
// Each rank holds the rows of Q, K and V at the global positions its layout gives it. In the
// forward, the K/V blocks travel around the ring (step s computes on the block that started
// s positions upstream while the next block is already in flight) and each block's fp32
// partial is merged into the running output with the online softmax. In the backward, the
// K/V blocks travel again, and each block's dK/dV partial travels with it, accumulated by
// every rank it visits, until it is home after P steps.
//
// Memory per rank (see workspace_bytes()): the caller's local tensors, two K/V receive
// buffers, two dK/dV receive buffers in fp32 (backward), one fp32 dK/dV accumulator, and
// fp32 accumulators for out/lse (forward) or dq and D (backward). Nothing of the size of the
// whole sequence is ever allocated.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>

#include "comm/agreement.hpp"
#include "comm/communicator.hpp"
#include "core/error.hpp"
#include "engine/ring_config.hpp"
#include "kernels/flash_attention.hpp"

namespace rfa {
namespace engine {

using kernels::Tensor3;
using kernels::Tensor4;

/// What a run spent its time on (seconds, this rank), for the main job and the benchmark.
struct RingTimings {
  double total = 0.0;
  double compute = 0.0;      ///< inside the flash kernels and the merge
  double wait = 0.0;         ///< blocked in Exchange::wait (communication not hidden)
  int steps_computed = 0;    ///< ring steps whose block was not fully masked
  std::int64_t bytes_sent = 0;
};

/// Benchmark switches: the same schedule with one half left out, to measure overlap.
enum class RingMode {
  full,          ///< communicate and compute (the real thing)
  compute_only,  ///< compute every step on the local block, send nothing
  comm_only      ///< run every exchange, compute nothing (results are garbage)
};

class RingAttention {
 public:
  /// Collective over `comm`: validates the config on every rank and that all ranks agree.
  RingAttention(comm::Communicator& comm, const RingConfig& config);

  const RingConfig& config() const { return config_; }
  int position() const { return comm_.rank(); }
  int ranks() const { return comm_.size(); }
  /// Rows of the sequence this rank holds (S / P).
  std::int64_t local_seq() const { return local_seq_; }
  /// The global positions of this rank's rows.
  PositionMap local_positions() const;

  /// Collective. q, out: [b][local_seq][heads][d]; k, v: [b][local_seq][kv_heads][d]; lse: [b][heads][local_seq].
  template <class T>
  void forward(Tensor4<const T> q, Tensor4<const T> k, Tensor4<const T> v, Tensor4<T> out, Tensor3<float> lse,
               RingMode mode = RingMode::full);

  /// Collective. out and lse are the forward's results; gradients are written in T.
  template <class T>
  void backward(Tensor4<const T> q, Tensor4<const T> k, Tensor4<const T> v, Tensor4<const T> out,
                Tensor4<const T> dout, Tensor3<const float> lse, Tensor4<T> dq, Tensor4<T> dk, Tensor4<T> dv,
                RingMode mode = RingMode::full);

  /// Timings of the last forward or backward on this rank.
  const RingTimings& last_timings() const { return timings_; }

  /// Bytes the engine allocates for a forward (backward = false) or backward, by the formula
  /// documented in the README; the tests check it against what is actually allocated.
  std::int64_t workspace_bytes(bool backward) const;
  /// Bytes of engine workspace allocated by the last forward or backward (measured).
  std::int64_t last_workspace_bytes() const { return last_workspace_bytes_; }

 private:
  template <class T>
  void check_local_tensors(const Tensor4<const T>& q, const Tensor4<const T>& k, const Tensor4<const T>& v) const;
  /// Runs this rank's argument checks, then agrees with the other ranks: if any rank's checks
  /// failed, every rank throws (before any K/V moves), so no rank is left waiting in a ring
  /// exchange its neighbour will never start.
  template <class Checks>
  void check_everywhere(Checks&& checks);

  comm::Communicator& comm_;
  RingConfig config_;
  std::int64_t local_seq_ = 0;
  RingTimings timings_;
  std::int64_t last_workspace_bytes_ = 0;
};

template <class Checks>
void RingAttention::check_everywhere(Checks&& checks) {
  comm::check_everywhere(comm_, std::forward<Checks>(checks));
}

}  // namespace engine
}  // namespace rfa
