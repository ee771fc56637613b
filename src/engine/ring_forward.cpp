// SPDX-License-Identifier: BSD-3-Clause
// The ring forward (docs/architecture.md §3): step s computes this rank's queries against the K/V block
// that started s positions upstream while the block for step s+1 is already travelling, then
// merges the block's fp32 partial into the running output.
#include <limits>
#include <type_traits>

#include "core/profiling_region.hpp"
#include "engine/block_compute_cuda.hpp"
#include "engine/block_compute_host.hpp"
#include "engine/ring_attention.hpp"
#include "engine/strategy_checks.hpp"
#include "engine/travelling_kv.hpp"
#include "engine/workspace.hpp"
#include "kernels/tensor_checks.hpp"
#include "kernels/tile_visibility.hpp"

namespace rfa {
namespace engine {

template <class T>
void RingAttention::forward(Tensor4<const T> q, Tensor4<const T> k, Tensor4<const T> v, Tensor4<T> out,
                            Tensor3<float> lse, RingMode mode) {
  HostBlockCompute blocks(host_arena());
  naming_step_of_timeout("forward", [&] { run_forward<HostBlockCompute, T>(blocks, q, k, v, out, lse, mode); });
}

#if RFA_ENGINE_CUDA
template <class T>
void RingAttention::forward_device(DeviceTensor4<const T> q, DeviceTensor4<const T> k, DeviceTensor4<const T> v,
                                   DeviceTensor4<T> out, DeviceTensor3<float> lse, RingMode mode) {
  comm_.set_compute_stream(cuda_stream_);
  const auto stream = static_cast<cudaStream_t>(cuda_stream_);
#if RFA_ENGINE_CUDNN
  if (cudnn_) {
    CudnnBlockCompute blocks(stream, device_cache_, device_mask_.pointers(), *cudnn_, step_params(), config_.cuda_path);
    naming_step_of_timeout("forward", [&] { run_forward<CudnnBlockCompute, T>(blocks, q, k, v, out, lse, mode); });
    timings_.steps_on_cudnn = blocks.cudnn_steps();
    return;
  }
#endif
  CudaBlockCompute blocks(stream, device_cache_, device_mask_.pointers(), config_.cuda_path);
  naming_step_of_timeout("forward", [&] { run_forward<CudaBlockCompute, T>(blocks, q, k, v, out, lse, mode); });
}
#endif

// The schedule, shared by every backend: `blocks` is the "compute one block" seam and
// comm_ the "move one buffer" one (docs/architecture.md §8).
template <class Compute, class T>
void RingAttention::run_forward(Compute& blocks, typename Compute::template Tensor4<const T> q,
                                typename Compute::template Tensor4<const T> k,
                                typename Compute::template Tensor4<const T> v,
                                typename Compute::template Tensor4<T> out,
                                typename Compute::template Tensor3<float> lse, RingMode mode) {
  using Space = typename Compute::memory_space;
  const AttentionConfig& c = config_;
  const std::int64_t L = local_seq_;
  const ScopedSeconds total = begin_pass();
  const int P = ranks(), me = position();
  const bool communicate = mode != RingMode::compute_only;
  const bool compute = mode != RingMode::comm_only;

  Workspace<Space> ws = blocks.workspace(workspace_pass(false, int(mode)));
  // The mask may hide a step on every rank (a window or documents shorter than the distance):
  // the pass runs only the steps some rank computes on, and its blocks jump over the others.
  TravellingKV<T, Space> kv(ws, comm_, c, L, k, v, communicate, steps_);
  // fp32 callers' out doubles as the accumulator; 16-bit outputs are narrowed at the end,
  // unless the pass has one step (one block, nothing to merge) and the backend writes it in
  // the storage dtype (direct_output(): the hybrid's one-group case, Ulysses, lives on that).
  constexpr bool kStorageOutput = !std::is_same<T, float>::value && Compute::kWritesStorageOutput;
  const bool direct = kStorageOutput && direct_output();
  typename Compute::template Tensor4<float> acc;
  if constexpr (std::is_same<T, float>::value) {
    acc = out;
  } else {
    if (!direct) acc = ws.template tensor4<float>("rfa::out_acc", c.batch, L, c.heads, c.dv());
  }
  // Scratch for one block's partial, unless the backend merges inside its forward kernel or the
  // pass has one step (nothing to merge).
  typename Compute::template Tensor4<float> block_out;
  typename Compute::template Tensor3<float> block_lse;
  if constexpr (!Compute::kMergesInKernel) {
    if (steps_.size() > 1) {
      block_out = ws.template tensor4<float>("rfa::block_out", c.batch, L, c.heads, c.dv());
      block_lse = ws.template tensor3<float>("rfa::block_lse", c.batch, c.heads, L);
    }
  }
  blocks.prepare_forward(largest_block_params(false), c.dtype, ws);
  agree_to_run(*agreement_, ws, [&] { check_forward_tensors<T>(c, L, q, k, v, out, lse); });
  if (!direct) blocks.fill(acc, 0.0f);
  blocks.fill(lse, -std::numeric_limits<float>::infinity());

  ExchangePoller poller;
  bool seen_any = false;  // the first visible block is written straight into the accumulator
  for (std::size_t i = 0; i < steps_.size(); ++i) {
    const int s = steps_[i];
    const ProfilingRegion region(ring_step_region("forward", s));
    current_step_ = s;
    const int owner = (me - s + P) % P;
    timings_.bytes_sent += kv.start(i);
    if (compute) {
      const kernels::AttentionParams p = block_params(c, P, me, owner);
      const bool visible = kernels::classify_blocks_every_entry(p, p.q_pos, p.k_pos) != kernels::TileVisibility::hidden;
      // A pass that writes the output directly has one step, whose block it computes even when
      // the mask hides it whole (a mask given as ranges may): the kernel then writes out = 0 and
      // lse = -inf, as nothing merges after it.
      if (visible || direct) {
        ScopedSeconds t(timings_.compute);
        poller.watch(kv.pending_k(), kv.pending_v());
        if (direct) {
          if constexpr (kStorageOutput) blocks.template forward_final<T>(p, q, kv.k(), kv.v(), out, lse, poller.hook());
        } else if (!seen_any) {  // merging into out = 0, lse = -inf would only copy
          blocks.template forward<T>(p, q, kv.k(), kv.v(), acc, lse, poller.hook());
        } else {
          blocks.template forward_merged<T>(p, q, kv.k(), kv.v(), acc, lse, block_out, block_lse, poller.hook());
        }
        seen_any = true;
        timings_.steps_computed += visible ? 1 : 0;
      }
      poller.rethrow_if_failed();
    }
    ScopedSeconds t(timings_.wait);
    kv.finish(i);
  }
  if constexpr (!std::is_same<T, float>::value) {
    if (!direct) blocks.template narrow<T>(acc, out);
  }
}

#if RFA_ENGINE_CUDA
template void RingAttention::forward_device<float>(DeviceTensor4<const float>, DeviceTensor4<const float>,
                                                   DeviceTensor4<const float>, DeviceTensor4<float>,
                                                   DeviceTensor3<float>, RingMode);
template void RingAttention::forward_device<bf16_t>(DeviceTensor4<const bf16_t>, DeviceTensor4<const bf16_t>,
                                                    DeviceTensor4<const bf16_t>, DeviceTensor4<bf16_t>,
                                                    DeviceTensor3<float>, RingMode);
template void RingAttention::forward_device<fp16_t>(DeviceTensor4<const fp16_t>, DeviceTensor4<const fp16_t>,
                                                    DeviceTensor4<const fp16_t>, DeviceTensor4<fp16_t>,
                                                    DeviceTensor3<float>, RingMode);
#endif
template void RingAttention::forward<float>(Tensor4<const float>, Tensor4<const float>, Tensor4<const float>,
                                            Tensor4<float>, Tensor3<float>, RingMode);
template void RingAttention::forward<bf16_t>(Tensor4<const bf16_t>, Tensor4<const bf16_t>, Tensor4<const bf16_t>,
                                             Tensor4<bf16_t>, Tensor3<float>, RingMode);
template void RingAttention::forward<fp16_t>(Tensor4<const fp16_t>, Tensor4<const fp16_t>, Tensor4<const fp16_t>,
                                             Tensor4<fp16_t>, Tensor3<float>, RingMode);

}  // namespace engine
}  // namespace rfa
