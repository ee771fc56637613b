// SPDX-License-Identifier: BSD-3-Clause
#include "engine/ring_attention.hpp"

#include <vector>

#include "core/error.hpp"
#include "engine/block_compute_host.hpp"
#include "engine/rank_positions.hpp"
#include "kernels/tensor_checks.hpp"
#include "layout/sequence_layout.hpp"

namespace rfa {
namespace engine {

RingAttention::RingAttention(comm::Communicator& comm, const AttentionConfig& config, comm::Communicator* agreement)
    : EngineState(comm, config), agreement_(agreement ? agreement : &comm) {
  validate_collective(comm_, config_);
  local_seq_ = layout::local_length(config_.layout, config_.seq_total, comm_.size());
  steps_ = ring_steps_with_work(config_, comm_.size());
  const int P = ranks(), me = position();
  for (const int s : steps_) kernel_calls_.push_back(block_params(config_, P, me, (me - s + P) % P));
  if (kernel_calls_.empty()) kernel_calls_.push_back(block_params(config_, P, me, me));
#if RFA_ENGINE_CUDA
  if (config_.device == Device::cuda) device_mask_ = copy_mask_to_device(*agreement_, config_);
#endif
#if RFA_ENGINE_CUDNN
  // Agreed: a rank where cuDNN cannot start (no handle on its device) fails every rank.
  if (config_.device == Device::cuda && config_.cuda_kernels == CudaKernels::cudnn)
    check_everywhere([&] { cudnn_ = std::make_unique<CudnnState>(); });
#else
  if (config_.cuda_kernels == CudaKernels::cudnn)
    check_everywhere([] { fail(RFA_ERROR_UNSUPPORTED, "this build's engine has no cuDNN block kernel"); });
#endif
  // A pass of one step computes step 0's block, kernel_calls_'s first.
  direct_output_ = steps_.size() == 1;
#if RFA_ENGINE_CUDNN
  if (cudnn_ && direct_output_)
    direct_output_ = cudnn_pass_writes_directly(kernel_calls_.front(), config_.dtype, device_mask_.pointers());
#endif
}

std::vector<kernels::AttentionParams> RingAttention::step_params() const {
  std::vector<kernels::AttentionParams> steps;
  const int P = ranks(), me = position();
  for (int s = 0; s < P; ++s) steps.push_back(block_params(config_, P, me, (me - s + P) % P));
  return steps;
}

RingAttention::~RingAttention() {
#if RFA_ENGINE_CUDA
  // Kernels of the last device call may still read or write the cached workspace.
  if (config_.device == Device::cuda) cudaStreamSynchronize(static_cast<cudaStream_t>(cuda_stream_));
#endif
}

bool RingAttention::direct_gradients() const {
#if RFA_ENGINE_CUDNN
  return cudnn_ && direct_output();
#else
  return false;
#endif
}

PositionMap RingAttention::local_positions() const { return rank_positions(config_, comm_.size(), comm_.rank()); }

std::int64_t RingAttention::workspace_bytes(bool backward, bool fp32_gradients) const {
  const AttentionConfig& c = config_;
  const std::int64_t elem = std::int64_t(dtype_size(c.dtype));
  const std::int64_t q_elems = c.batch * local_seq_ * c.heads * c.head_dim;
  const std::int64_t out_elems = c.batch * local_seq_ * c.heads * c.dv();
  // K and V together (V's head dim may differ).
  const std::int64_t kv_elems = c.batch * local_seq_ * c.kv_heads * (c.head_dim + c.dv());
  const std::int64_t row_elems = c.batch * c.heads * local_seq_;
  const bool fp32 = c.dtype == RFA_DTYPE_FLOAT32;
  const bool moves = steps_.size() > 1;  // a pass of one step moves and merges nothing
  // Two K/V receive buffers (K and V each) in the storage dtype.
  std::int64_t bytes = moves ? 2 * kv_elems * elem : 0;
  if (!backward) {
    // fp32 output accumulator (fp32 callers' out is used in place, and so is a 16-bit out
    // written directly by the one block of a one-step pass).
    bytes += fp32 || direct_output() ? 0 : out_elems * 4;
    // One block's fp32 partial output and lse; the CUDA kernels merge in their epilogue instead.
    if (c.device == Device::host && moves) bytes += out_elems * 4 + row_elems * 4;
  } else {
    // fp32 dQ, dK and dV accumulate in place; 16-bit ones written in place need no fp32 sums.
    const bool grads_in_place = fp32 || fp32_gradients || direct_gradients();
    if (moves) bytes += 2 * kv_elems * 4;                       // two travelling dK/dV partials, fp32
    if (steps_.size() > 2) bytes += kv_elems * 4;               // this step's dK/dV contribution, fp32
    bytes += (grads_in_place ? 0 : kv_elems * 4 + q_elems * 4)  // fp32 dK/dV of the own block, dQ
             + row_elems * 4;                                   // D = rowsum(dO * O)
  }
  return bytes + kernel_workspace_bytes(backward);
}

std::int64_t RingAttention::kernel_workspace_bytes(bool backward) const {
  if (config_.device != Device::host) return 0;  // the CUDA kernels allocate nothing
  return HostBlockCompute::workspace_bytes(kernel_calls_, config_.dtype, backward);
}

}  // namespace engine
}  // namespace rfa
