// SPDX-License-Identifier: BSD-3-Clause
// The ring backward (docs/architecture.md §3). K/V blocks travel as in the forward; each block's dK/dV
// partial travels one step behind it, starting at the first rank after its owner: at each step
// a rank computes its contribution to block j's gradient into a zeroed local buffer (while the
// partial sum from the ranks before it is still arriving), then adds the arrived partial and
// sends the sum on; after the last step the partial goes straight home, where the owner adds it
// to its own step's contribution. P-1 gradient hops per block, none before the first step's
// compute. Both run only the steps some rank computes on (ring_steps_with_work()), jumping
// over the others.
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
    CudnnBlockCompute blocks(stream, device_cache_, device_doc_bounds(), *cudnn_, step_params(), config_.cuda_path);
    naming_step_of_timeout("backward", [&] {
      run_backward<CudnnBlockCompute, T, TGrad>(blocks, q, k, v, out, dout, lse, dq, dk, dv, mode);
    });
    timings_.steps_on_cudnn = blocks.cudnn_steps();
    return;
  }
#endif
  CudaBlockCompute blocks(stream, device_cache_, device_doc_bounds(), config_.cuda_path);
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
  const RingConfig& c = config_;
  const std::int64_t L = local_seq_;
  timings_ = RingTimings();
  ScopedSeconds total(timings_.total);
  const int P = ranks(), me = position();
  const bool communicate = mode != RingMode::compute_only;
  const bool compute = mode != RingMode::comm_only;
  const std::int64_t B = c.batch, HKV = c.kv_heads, D = c.head_dim;

  constexpr bool kFp32Grads = std::is_same<TGrad, float>::value;
  const std::size_t n = steps_.size();
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
    dv_home = ws.template tensor4<float>("rfa::dv_home", B, L, HKV, D);
  }
  // The travelling partials of other ranks' blocks, in turn the one this step adds to and sends
  // on and the one arriving; *_step this step's contribution while the partial still arrives
  // (needed from the third step on: at the second the partial starts here).
  Grad dk_part[2], dv_part[2], dk_step, dv_step;
  if (n > 1) {
    dk_part[0] = ws.template tensor4<float>("rfa::dk_part0", B, L, HKV, D);
    dv_part[0] = ws.template tensor4<float>("rfa::dv_part0", B, L, HKV, D);
    dk_part[1] = ws.template tensor4<float>("rfa::dk_part1", B, L, HKV, D);
    dv_part[1] = ws.template tensor4<float>("rfa::dv_part1", B, L, HKV, D);
  }
  if (n > 2) {
    dk_step = ws.template tensor4<float>("rfa::dk_step", B, L, HKV, D);
    dv_step = ws.template tensor4<float>("rfa::dv_step", B, L, HKV, D);
  }
  Grad dq_acc;
  if constexpr (kFp32Grads) {
    dq_acc = dq;
  } else {
    dq_acc = ws.template tensor4<float>("rfa::dq_acc", B, L, c.heads, D);
  }
  auto delta = ws.template tensor3<float>("rfa::delta", B, c.heads, L);
  blocks.prepare_backward(block_params(c, P, me, me), c.dtype, ws);  // every block has these queries
  last_workspace_bytes_ = ws.bytes();
  check_everywhere([&] {
    check_backward_tensors<T>(c, L, q, k, v, out, dout, lse, dq, dk, dv);
    ws.throw_if_failed();
  });

  blocks.fill(dq_acc, 0.0f);
  blocks.fill(dk_home, 0.0f);
  blocks.fill(dv_home, 0.0f);
  if (!communicate && n > 1) {
    // Nothing will arrive; the benchmark's compute-only schedule still adds into the partials,
    // and uninitialized memory (denormals, NaNs) could skew its timing.
    blocks.fill(dk_part[0], 0.0f);
    blocks.fill(dv_part[0], 0.0f);
  }
  {
    ScopedSeconds t(timings_.compute);
    blocks.template delta<T>(block_params(c, P, me, me), dout, out, delta);
  }

  const std::size_t grad_bytes = std::size_t(B * L * HKV * D) * sizeof(float);
  comm::Exchange grad_k, grad_v;  // the dK/dV partial arriving for the next step's block
  ExchangePoller poller;
  for (std::size_t i = 0; i < n; ++i) {
    const int s = steps_[i];
    const ProfilingRegion region(ring_step_region("backward", s));
    current_step_ = s;
    const int owner = (me - s + P) % P;
    timings_.bytes_sent += kv.start(i);
    // Block `owner`'s partial: at step 0 the home gradient (zeroed before the pass); at the
    // second step it starts here, at zero (nobody before this rank has seen the block); later it
    // arrives from the previous holder.
    Grad dk_block = i == 0 ? dk_home : dk_part[i % 2], dv_block = i == 0 ? dv_home : dv_part[i % 2];
    if (i == 1) {
      blocks.fill(dk_block, 0.0f);
      blocks.fill(dv_block, 0.0f);
    }
    bool contributed = false;
    if (compute) {
      const kernels::AttentionParams p = block_params(c, P, me, owner);
      if (kernels::classify_blocks(p.rule(), p.q_pos, p.k_pos) != kernels::TileVisibility::hidden) {
        ScopedSeconds t(timings_.compute);
        // Into the block's gradient directly where nothing is arriving for it; otherwise apart,
        // while the partial from upstream still arrives.
        const bool direct = i <= 1;
        Grad dk_into = direct ? dk_block : dk_step, dv_into = direct ? dv_block : dv_step;
        if (!direct) {
          blocks.fill(dk_step, 0.0f);
          blocks.fill(dv_step, 0.0f);
        }
        poller.watch(kv.pending_k(), kv.pending_v(), &grad_k, &grad_v);
        blocks.template backward<T>(p, q, kv.k(), kv.v(), out, dout, lse, delta, dq_acc, dk_into, dv_into,
                                    poller.hook());
        contributed = !direct;
        ++timings_.steps_computed;
      }
      poller.rethrow_if_failed();
    }
    if (communicate) {
      ScopedSeconds t(timings_.wait);
      grad_k.wait();
      grad_v.wait();
    }
    if (contributed) {
      ScopedSeconds t(timings_.compute);
      blocks.add(dk_block, dk_step);
      blocks.add(dv_block, dv_step);
    }
    // From the second step on, block `owner`'s partial goes to the rank of the next step; after
    // the last step, to `owner` itself.
    if (communicate && i >= 1) {
      const int hops = i + 1 < n ? steps_[i + 1] - s : P - s;
      grad_k = comm_.start_shift_exchange(dk_block.data(), dk_part[(i + 1) % 2].data(), grad_bytes, hops);
      grad_v = comm_.start_shift_exchange(dv_block.data(), dv_part[(i + 1) % 2].data(), grad_bytes, hops);
      timings_.bytes_sent += std::int64_t(2 * grad_bytes);
    }
    {
      ScopedSeconds t(timings_.wait);
      kv.finish(i);
    }
  }
  {
    ScopedSeconds t(timings_.wait);
    grad_k.wait();
    grad_v.wait();
  }
  if (n > 1) {
    // What the other ranks added to this rank's block, delivered by the last exchange.
    ScopedSeconds t(timings_.compute);
    blocks.add(dk_home, dk_part[n % 2]);
    blocks.add(dv_home, dv_part[n % 2]);
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
