// SPDX-License-Identifier: BSD-3-Clause
// The ring backward (docs/architecture.md §3): the K/V blocks travel as in the forward
// (travelling_kv.hpp) and each block's dK/dV partial one step behind it
// (travelling_gradients.hpp); a rank computes each step's dQ into its own accumulator and its
// contribution to the held block's dK/dV. Both run only the steps some rank computes on
// (ring_steps_with_work()), jumping over the others.
#include <type_traits>

#include "core/profiling_region.hpp"
#include "engine/block_compute_cuda.hpp"
#include "engine/block_compute_host.hpp"
#include "engine/ring_attention.hpp"
#include "engine/strategy_checks.hpp"
#include "engine/travelling_gradients.hpp"
#include "engine/travelling_kv.hpp"
#include "engine/workspace.hpp"
#include "kernels/tensor_checks.hpp"
#include "kernels/tile_visibility.hpp"

namespace rfa {
namespace engine {
template <class T, class TGrad>
void RingAttention::backward(Tensor4<const T> q, Tensor4<const T> k, Tensor4<const T> v, Tensor4<const T> out,
                             Tensor4<const T> dout, Tensor3<const float> lse, Tensor4<TGrad> dq, Tensor4<TGrad> dk,
                             Tensor4<TGrad> dv, RingMode mode) {
  HostBlockCompute blocks(host_arena());
  naming_step_of_timeout(
      "backward", [&] { run_backward<HostBlockCompute, T, TGrad>(blocks, q, k, v, out, dout, lse, dq, dk, dv, mode); });
}

#if RFA_ENGINE_CUDA
template <class T, class TGrad>
void RingAttention::backward_device(DeviceTensor4<const T> q, DeviceTensor4<const T> k, DeviceTensor4<const T> v,
                                    DeviceTensor4<const T> out, DeviceTensor4<const T> dout,
                                    DeviceTensor3<const float> lse, DeviceTensor4<TGrad> dq, DeviceTensor4<TGrad> dk,
                                    DeviceTensor4<TGrad> dv, RingMode mode) {
  comm_.set_compute_stream(cuda_stream_);
  const auto stream = static_cast<cudaStream_t>(cuda_stream_);
#if RFA_ENGINE_CUDNN
  if (cudnn_) {
    CudnnBlockCompute blocks(stream, device_cache_, device_mask_.pointers(), *cudnn_, step_params(), config_.cuda_path);
    naming_step_of_timeout("backward", [&] {
      run_backward<CudnnBlockCompute, T, TGrad>(blocks, q, k, v, out, dout, lse, dq, dk, dv, mode);
    });
    timings_.steps_on_cudnn = blocks.cudnn_steps();
    return;
  }
#endif
  CudaBlockCompute blocks(stream, device_cache_, device_mask_.pointers(), config_.cuda_path);
  naming_step_of_timeout(
      "backward", [&] { run_backward<CudaBlockCompute, T, TGrad>(blocks, q, k, v, out, dout, lse, dq, dk, dv, mode); });
}
#endif

// The schedule, shared by every backend (docs/architecture.md §8); `blocks` computes.
template <class Compute, class T, class TGrad>
void RingAttention::run_backward(
    Compute& blocks, typename Compute::template Tensor4<const T> q, typename Compute::template Tensor4<const T> k,
    typename Compute::template Tensor4<const T> v, typename Compute::template Tensor4<const T> out,
    typename Compute::template Tensor4<const T> dout, typename Compute::template Tensor3<const float> lse,
    typename Compute::template Tensor4<TGrad> dq, typename Compute::template Tensor4<TGrad> dk,
    typename Compute::template Tensor4<TGrad> dv, RingMode mode) {
  using Space = typename Compute::memory_space;
  using Grad = typename Compute::template Tensor4<float>;
  const AttentionConfig& c = config_;
  const std::int64_t L = local_seq_;
  const ScopedSeconds total = begin_pass();
  const int P = ranks(), me = position();
  const bool communicate = mode != RingMode::compute_only;
  const bool compute = mode != RingMode::comm_only;
  const std::int64_t B = c.batch, HKV = c.kv_heads, D = c.head_dim, DV = c.dv();

  constexpr bool kFp32Grads = std::is_same<TGrad, float>::value;
  Workspace<Space> ws = blocks.workspace(workspace_pass(true, int(mode)));
  TravellingKV<T, Space> kv(ws, comm_, c, L, k, v, communicate, steps_);
  // dK/dV of this rank's own block: its step-0 contribution, and at the end the partial the
  // others summed; fp32 gradients accumulate in the caller's tensors.
  Grad dk_home, dv_home;
  if constexpr (kFp32Grads) {
    dk_home = dk;
    dv_home = dv;
  } else {
    dk_home = ws.template tensor4<float>("rfa::dk_home", B, L, HKV, D);
    dv_home = ws.template tensor4<float>("rfa::dv_home", B, L, HKV, DV);
  }
  TravellingGradients<Compute> grads(blocks, ws, comm_, c, L, dk_home, dv_home, communicate, steps_);
  Grad dq_acc;
  if constexpr (kFp32Grads) {
    dq_acc = dq;
  } else {
    dq_acc = ws.template tensor4<float>("rfa::dq_acc", B, L, c.heads, D);
  }
  auto delta = ws.template tensor3<float>("rfa::delta", B, c.heads, L);
  blocks.prepare_backward(largest_block_params(true), c.dtype, ws);
  agree_to_run(*agreement_, ws, [&] { check_backward_tensors<T>(c, L, q, k, v, out, dout, lse, dq, dk, dv); });

  blocks.fill(dq_acc, 0.0f);
  grads.zero();
  {
    ScopedSeconds t(timings_.compute);
    blocks.template delta<T>(block_params(c, P, me, me), dout, out, delta);
  }

  ExchangePoller poller;
  for (std::size_t i = 0; i < steps_.size(); ++i) {
    const int s = steps_[i];
    const ProfilingRegion region(ring_step_region("backward", s));
    current_step_ = s;
    const int owner = (me - s + P) % P;
    timings_.bytes_sent += kv.start(i);
    grads.begin(i);
    if (compute) {
      const kernels::AttentionParams p = block_params(c, P, me, owner);
      if (kernels::classify_blocks_every_entry(p, p.q_pos, p.k_pos) != kernels::TileVisibility::hidden) {
        ScopedSeconds t(timings_.compute);
        const auto [dk_into, dv_into] = grads.contribution();
        poller.watch(kv.pending_k(), kv.pending_v(), grads.pending_k(), grads.pending_v());
        blocks.template backward<T>(p, q, kv.k(), kv.v(), out, dout, lse, delta, dq_acc, dk_into, dv_into,
                                    poller.hook());
        ++timings_.steps_computed;
      }
      poller.rethrow_if_failed();
    }
    {
      ScopedSeconds t(timings_.wait);
      grads.wait_arrival();
    }
    {
      ScopedSeconds t(timings_.compute);
      grads.add_contribution();
    }
    timings_.bytes_sent += grads.send_on();
    {
      ScopedSeconds t(timings_.wait);
      kv.finish(i);
    }
  }
  {
    ScopedSeconds t(timings_.wait);
    grads.wait_arrival();
  }
  {
    ScopedSeconds t(timings_.compute);
    grads.add_home();
  }
  if constexpr (!kFp32Grads) {
    blocks.template narrow<TGrad>(dq_acc, dq);
    blocks.template narrow<TGrad>(dk_home, dk);
    blocks.template narrow<TGrad>(dv_home, dv);
  }
}

#define RFA_INSTANTIATE_BACKWARD(T, TGrad)                                                                  \
  template void RingAttention::backward<T, TGrad>(Tensor4<const T>, Tensor4<const T>, Tensor4<const T>,     \
                                                  Tensor4<const T>, Tensor4<const T>, Tensor3<const float>, \
                                                  Tensor4<TGrad>, Tensor4<TGrad>, Tensor4<TGrad>, RingMode);
#if RFA_ENGINE_CUDA
#define RFA_INSTANTIATE_BACKWARD_DEVICE(T, TGrad)                                                     \
  template void RingAttention::backward_device<T, TGrad>(                                             \
      DeviceTensor4<const T>, DeviceTensor4<const T>, DeviceTensor4<const T>, DeviceTensor4<const T>, \
      DeviceTensor4<const T>, DeviceTensor3<const float>, DeviceTensor4<TGrad>, DeviceTensor4<TGrad>, \
      DeviceTensor4<TGrad>, RingMode);
#else
#define RFA_INSTANTIATE_BACKWARD_DEVICE(T, TGrad)
#endif
// Gradients in the storage dtype (callers), and in fp32 for 16-bit storage (the hybrid).
#define RFA_INSTANTIATE_BACKWARDS(T, TGrad) \
  RFA_INSTANTIATE_BACKWARD(T, TGrad)        \
  RFA_INSTANTIATE_BACKWARD_DEVICE(T, TGrad)
RFA_INSTANTIATE_BACKWARDS(float, float)
RFA_INSTANTIATE_BACKWARDS(bf16_t, bf16_t)
RFA_INSTANTIATE_BACKWARDS(fp16_t, fp16_t)
RFA_INSTANTIATE_BACKWARDS(bf16_t, float)
RFA_INSTANTIATE_BACKWARDS(fp16_t, float)

}  // namespace engine
}  // namespace rfa
