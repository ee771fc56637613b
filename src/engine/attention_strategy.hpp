// SPDX-License-Identifier: BSD-3-Clause
// One interface over the context-parallel strategies (docs/architecture.md §8): the ring,
// Ulysses, KV all-gather and the hybrid Ulysses x ring grid are schedules over the same two
// seams, and callers (the C API, the benchmark) hold any of them through this class.
//
// The needed-only exchange sends each rank only the K/V rows its queries see.
//
// Every strategy takes the same local tensors (this rank's rows of the sequence, bshd, all
// heads) and gives the same results; they differ in what they send, what they hold and how
// their communication overlaps compute. Which rows a rank holds is the strategy's to say
// (local_positions()): the ring, Ulysses and all-gather follow the layout over all P ranks;
// the hybrid applies it over its ring groups.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>

#include "comm/communicator.hpp"
#include "engine/attention_config.hpp"
#include "engine/engine_backends.hpp"
#include "engine/engine_state.hpp"
#include "engine/pass_tensors.hpp"

namespace rfa {
namespace engine {

enum class StrategyKind { ring, ulysses, allgather, hybrid, needed };

/// The strategy and its knobs, as the C API's options give them.
struct StrategyChoice {
  StrategyKind kind = StrategyKind::ring;
  /// Ranks per Ulysses group: P for Ulysses (0 means P), Pu for the hybrid (Pu x P/Pu).
  int ulysses_degree = 0;
  /// K/V heads gathered at once by the all-gather strategy (1: least memory).
  std::int64_t kv_heads_per_chunk = 1;
};

const char* strategy_name(StrategyKind kind);

/// Throws RFA_ERROR_INVALID_ARGUMENT, saying what to change, unless `choice` can run `config`
/// on `ranks` ranks. The same verdict on every rank for the same arguments (no communication).
void validate_strategy(const StrategyChoice& choice, const AttentionConfig& config, int ranks);

/// Collective: the ranks agree on `config` and `choice`, then on validate_strategy()'s verdict;
/// every rank throws together (RFA_ERROR_INVALID_USAGE naming what differs, or the failing
/// rank's error) before anything is allocated or sent. make_strategy() and every strategy's
/// constructor start with it, so a strategy built directly is held to the same rules.
void agree_on_strategy(comm::Communicator& comm, const AttentionConfig& config, const StrategyChoice& choice);

class AttentionStrategy {
 public:
  virtual ~AttentionStrategy() = default;
  AttentionStrategy(const AttentionStrategy&) = delete;
  AttentionStrategy& operator=(const AttentionStrategy&) = delete;

  virtual StrategyKind kind() const = 0;
  /// The problem, as every rank agreed on it.
  virtual const AttentionConfig& config() const = 0;
  /// This rank's position on the communicator it was built on, and the number of ranks.
  virtual int position() const = 0;
  virtual int ranks() const = 0;
  /// Rows of the sequence this rank holds, and their global positions.
  virtual std::int64_t local_seq() const = 0;
  virtual PositionMap local_positions() const = 0;
  /// Timings and bytes sent of the last forward or backward on this rank.
  virtual const PassTimings& last_timings() const = 0;
  /// Engine workspace by the strategy's documented formula, and as last allocated.
  virtual std::int64_t workspace_bytes(bool backward) const = 0;
  virtual std::int64_t last_workspace_bytes() const = 0;
  /// What the kernels' own buffers take in a pass, part of workspace_bytes(): the portable
  /// kernels' copies or the bf16 products' packed operands, lent from the workspace and kept
  /// with it.
  virtual std::int64_t kernel_workspace_bytes(bool backward) const = 0;
  /// Bytes of workspace kept between calls (docs/memory.md), and freeing them (not
  /// collective; a CUDA context waits for its stream first).
  virtual std::int64_t held_workspace_bytes() const = 0;
  virtual void release_workspace() = 0;
  /// Whether a transport of the engine abandoned transfers (a timeout, or an MPI failure while
  /// posting an exchange): its exchanges are then out of step for good.
  virtual bool transfers_abandoned() const = 0;

  /// Collective. This rank's tensors (pass_tensors.hpp), in host memory or, for a CUDA context,
  /// in the device's (then the call returns once the work is queued on the stream; the results
  /// are ready when the stream reaches this point). A `mode` other than full (the benchmark's
  /// schedules without communication or without compute) is the ring's alone: the other
  /// strategies refuse it with RFA_ERROR_UNSUPPORTED.
  void forward(const AnyForwardTensors& tensors, RingMode mode = RingMode::full) { run_forward(tensors, mode); }
  /// Collective. The forward's inputs and results, dO, and the gradients; `mode` as in forward().
  void backward(const AnyBackwardTensors& tensors, RingMode mode = RingMode::full) { run_backward(tensors, mode); }

  /// Host tensors given one by one (tests, benchmarks): as forward() and backward() above.
  template <class T>
  void forward(Tensor4<const T> q, Tensor4<const T> k, Tensor4<const T> v, Tensor4<T> out, Tensor3<float> lse,
               RingMode mode = RingMode::full) {
    run_forward(HostForward<T>{q, k, v, out, lse}, mode);
  }
  template <class T>
  void backward(Tensor4<const T> q, Tensor4<const T> k, Tensor4<const T> v, Tensor4<const T> out, Tensor4<const T> dout,
                Tensor3<const float> lse, Tensor4<T> dq, Tensor4<T> dk, Tensor4<T> dv, RingMode mode = RingMode::full) {
    run_backward(HostBackward<T>{q, k, v, out, dout, lse, dq, dk, dv}, mode);
  }

  /// The cudaStream_t (as void*) device passes queue their work on; nullptr, the default, is
  /// the legacy default stream. The stream must outlive the calls that use it and the strategy
  /// itself, whose destruction waits for its last work on it (cudaStreamSynchronize): to
  /// destroy the stream first, synchronize it and set nullptr here.
  virtual void set_cuda_stream(void* stream) = 0;
  virtual void* cuda_stream() const = 0;

 protected:
  AttentionStrategy() = default;
  virtual void run_forward(const AnyForwardTensors& tensors, RingMode mode) = 0;
  virtual void run_backward(const AnyBackwardTensors& tensors, RingMode mode) = 0;
};

/// Collective over `comm`: validates the config and the choice on every rank (all fail
/// together, with a message that says what to change) and builds the strategy. `comm` must
/// outlive it.
std::unique_ptr<AttentionStrategy> make_strategy(comm::Communicator& comm, const AttentionConfig& config,
                                                 const StrategyChoice& choice);

}  // namespace engine
}  // namespace rfa
