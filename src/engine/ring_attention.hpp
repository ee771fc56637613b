// SPDX-License-Identifier: BSD-3-Clause
// Exact attention over a sequence split across the ranks of a ring (docs/architecture.md §3-§5).
//
// Each rank holds the rows of Q, K and V at the global positions its layout gives it. In the
// forward, the K/V blocks travel around the ring (step s computes on the block that started
// s positions upstream while the next block is already in flight) and each block's fp32
// partial is merged into the running output with the online softmax. In the backward, the
// K/V blocks travel again, and each block's dK/dV partial travels one step behind it from the
// first rank after its owner, accumulated by every rank it visits, until it goes home after
// the last step and is added to the owner's own contribution. Steps no rank computes on (a
// window, documents) are jumped over, forward and backward (ring_steps_with_work()).
//
// Memory per rank (see workspace_bytes()): the caller's local tensors, two K/V receive
// buffers, two travelling dK/dV partials in fp32 (backward), one fp32 dK/dV contribution (from
// three steps on), and fp32 accumulators for out/lse (forward) or dq, the own block's dK/dV
// (16-bit gradients; fp32 ones accumulate in place) and D (backward). A pass of one step (one
// rank, or a window within the local block) moves nothing and keeps only what it computes
// into: no receive buffers, and no accumulators where the caller's tensors can be written
// directly (a 16-bit out on rfa's kernels, fp32 gradients). Nothing of the size of the whole
// sequence is ever allocated.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "comm/agreement.hpp"
#include "comm/communicator.hpp"
#include "core/error.hpp"
#include "engine/attention_config.hpp"
#include "engine/block_compute_cudnn.hpp"
#include "engine/device_mask_data.hpp"
#include "engine/engine_backends.hpp"
#include "engine/engine_state.hpp"
#include "engine/pass_tensors.hpp"
#include "engine/workspace.hpp"
#include "kernels/flash_attention.hpp"
#include "kernels/tensor_checks.hpp"

namespace rfa {
namespace engine {

class RingAttention : public EngineState {
 public:
  /// Collective over `comm`: validates the config on every rank and that all ranks agree.
  /// `agreement`, when given, is a communicator that holds `comm`'s ranks and more, all of which
  /// run this ring's passes together (the hybrid's: every ring group at once): the checks
  /// before each pass agree over it, so a refused buffer in one ring group fails every group
  /// before any of them computes. It must outlive the engine.
  RingAttention(comm::Communicator& comm, const AttentionConfig& config, comm::Communicator* agreement = nullptr);
  /// Waits for work still queued on the CUDA stream before the device workspace is freed.
  ~RingAttention();
  RingAttention(const RingAttention&) = delete;
  RingAttention& operator=(const RingAttention&) = delete;

  /// The global positions of this rank's rows.
  PositionMap local_positions() const;

  /// Collective. The pass's tensors (pass_tensors.hpp): q, out [b][local_seq][heads][d];
  /// k, v [b][local_seq][kv_heads][d]; lse [b][heads][local_seq]. In host memory the blocks are
  /// computed by the host kernels; in device memory by kernels_cuda (or cuDNN) on the CUDA
  /// stream (set_cuda_stream), moving through a communicator that accepts device memory, and
  /// the call returns once the work is queued (synchronize the stream before reading results).
  /// `before_first_step`, when given, runs on every rank once the pass's buffers are allocated
  /// and its checks agreed (over `agreement`), before any block is read or moved: a caller that
  /// fills the pass's inputs with communication of its own (the hybrid's head exchange) does it
  /// there, so that a buffer refused on any rank fails every rank before anything moves.
  void forward(const AnyForwardTensors& tensors, RingMode mode = RingMode::full,
               const std::function<void()>& before_first_step = {});

  /// Collective. out and lse are the forward's results; the gradients are written in the
  /// storage dtype. Memory spaces as forward().
  void backward(const AnyBackwardTensors& tensors, RingMode mode = RingMode::full);

  /// Collective. As backward(), with the gradients written in fp32 for a caller that sums them
  /// further (the hybrid's K/V heads shared by several ranks), which then need no fp32
  /// accumulators of the engine's own. `before_first_step` as in forward().
  void backward_fp32_gradients(const AnyFp32GradientTensors& tensors,
                               const std::function<void()>& before_first_step = {});

  /// Bytes the engine allocates for a forward (backward = false) or backward, by the formula
  /// documented in docs/memory.md; the tests check it against what is actually allocated.
  /// `fp32_gradients`: for a backward that writes its gradients in fp32 (TGrad = float).
  std::int64_t workspace_bytes(bool backward, bool fp32_gradients = false) const;
  /// What the kernels allocate for themselves during one pass (kernels/flash_attention.hpp:
  /// packing for AMX tiles; 0 elsewhere), part of workspace_bytes().
  std::int64_t kernel_workspace_bytes(bool backward) const;
  /// The params of the blocks this rank's kernels compute in a pass (its steps' blocks, found
  /// once at creation): the host kernels' buffers are each as large as the call among them that
  /// needs that buffer most (HostBlockCompute::prepare_forward over a list), which under a
  /// mask given as ranges or a window may be a different block for each buffer.
  const std::vector<kernels::AttentionParams>& kernel_calls() const { return kernel_calls_; }

 private:
  /// The one dispatch on the memory space: runs `run` with the block compute of `Space`
  /// (HostBlockCompute; on a device CudaBlockCompute, or CudnnBlockCompute where the context's
  /// steps run on cuDNN). Defined in ring_block_compute.hpp.
  template <class Space, class Run>
  void with_block_compute(Run&& run);

  /// The ring schedules, written once over the "compute one block" seam (`Compute`:
  /// HostBlockCompute, CudaBlockCompute or CudnnBlockCompute) and the communicator
  /// (docs/architecture.md §8).
  template <class Compute, class T>
  void run_forward(Compute& blocks, const ForwardTensors<T, typename Compute::memory_space>& tensors, RingMode mode,
                   const std::function<void()>& before_first_step);
  template <class Compute, class T, class TGrad>
  void run_backward(Compute& blocks, const BackwardTensors<T, typename Compute::memory_space, TGrad>& tensors,
                    RingMode mode, const std::function<void()>& before_first_step);
  /// The backward of a pass of one step whose 16-bit gradients the backend writes in place
  /// (direct_gradients()): no fp32 sums to fill, add or narrow.
  template <class Compute, class T, class TGrad>
  void run_backward_in_place(Compute& blocks, const BackwardTensors<T, typename Compute::memory_space, TGrad>& tensors,
                             RingMode mode, const std::function<void()>& before_first_step);
  /// Either backward's bundle, whatever its dtype and memory space.
  template <class AnyTensors>
  void backward_of(const AnyTensors& tensors, RingMode mode, const std::function<void()>& before_first_step);

  /// Whether a forward writes the caller's out directly, without an fp32 accumulator: a pass of
  /// one step (one block, nothing to merge), on cuDNN not where it computes that block as
  /// several bands (cudnn_pass_writes_directly). Decided at construction.
  bool direct_output() const { return direct_output_; }
  /// Whether a backward writes the caller's 16-bit dq, dk and dv in place, without fp32 sums:
  /// a pass of one step on cuDNN where it computes that block as one band over the whole of it,
  /// or where rfa's kernels store a block cuDNN does not compute (direct_output()); the other
  /// backends accumulate a pass's gradients in fp32 and narrow them.
  bool direct_gradients() const;

  /// Runs this rank's argument and allocation checks, then agrees with the other ranks (of
  /// `agreement_`): if any rank's checks failed, every rank throws (before any K/V moves), so no
  /// rank is left waiting in a ring exchange its neighbour will never start.
  template <class Checks>
  void check_everywhere(Checks&& checks);

  comm::Communicator* agreement_;                       // where check_everywhere agrees: comm_ unless given
  std::vector<int> steps_;                              // ring_steps_with_work(): the steps forward and backward run
  std::vector<kernels::AttentionParams> kernel_calls_;  // kernel_calls()
  bool direct_output_ = false;                          // direct_output()
  int current_step_ = -1;                               // the ring step a pass is in, for the message of a timeout
  /// The block params of every ring step of this rank (owner = position - step).
  std::vector<kernels::AttentionParams> step_params() const;

  /// Runs a pass; a timeout is rethrown naming the pass and the ring step it happened in.
  template <class Pass>
  void naming_step_of_timeout(const char* pass, Pass&& run) {
    current_step_ = -1;
    try {
      run();
    } catch (const Error& e) {
      if (e.code() != RFA_ERROR_TIMEOUT) throw;
      if (current_step_ < 0) throw;  // before the ring started: the message says where
      fail(RFA_ERROR_TIMEOUT, pass, ", ring step ", current_step_, " of ", ranks(), " (ring position ", position(),
           "): ", e.what());
    }
  }
#if RFA_ENGINE_CUDA
  /// config_'s documents and ranges in device memory, for the CUDA kernels' mask.
  DeviceMaskData device_mask_;
#endif
#if RFA_ENGINE_CUDNN
  /// The cuDNN handle and plans of a context whose steps run on cuDNN (config_.cuda_kernels).
  std::unique_ptr<CudnnState> cudnn_;
#endif
};

template <class Checks>
void RingAttention::check_everywhere(Checks&& checks) {
  comm::check_everywhere(*agreement_, std::forward<Checks>(checks));
}

}  // namespace engine
}  // namespace rfa
