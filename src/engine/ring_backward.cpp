// SPDX-License-Identifier: BSD-3-Clause
// The ring backward (docs/architecture.md §3): the K/V blocks travel as in the forward
// (travelling_kv.hpp) and each block's dK/dV partial one step behind it
// (travelling_gradients.hpp); a rank computes each step's dQ into its own accumulator and its
// contribution to the held block's dK/dV. Both run only the steps some rank computes on
// (ring_steps_with_work()), jumping over the others.
#include <type_traits>
#include <variant>

#include "core/profiling_region.hpp"
#include "engine/ring_attention.hpp"
#include "engine/ring_block_compute.hpp"
#include "engine/strategy_checks.hpp"
#include "engine/travelling_gradients.hpp"
#include "engine/travelling_kv.hpp"
#include "engine/workspace.hpp"
#include "kernels/tensor_checks.hpp"
#include "kernels/tile_visibility.hpp"

namespace rfa {
namespace engine {
void RingAttention::backward(const AnyBackwardTensors& tensors, RingMode mode) { backward_of(tensors, mode); }

void RingAttention::backward_fp32_gradients(const AnyFp32GradientTensors& tensors) {
  backward_of(tensors, RingMode::full);
}

template <class AnyTensors>
void RingAttention::backward_of(const AnyTensors& tensors, RingMode mode) {
  std::visit(
      [&](const auto& t) {
        with_block_compute<typename std::decay_t<decltype(t)>::memory_space>(
            [&](auto& blocks) { naming_step_of_timeout("backward", [&] { run_backward(blocks, t, mode); }); });
      },
      tensors);
}

// The schedule, shared by every backend (docs/architecture.md §8); `blocks` computes.
template <class Compute, class T, class TGrad>
void RingAttention::run_backward(Compute& blocks,
                                 const BackwardTensors<T, typename Compute::memory_space, TGrad>& tensors,
                                 RingMode mode) {
  using Space = typename Compute::memory_space;
  const auto& q = tensors.q;
  const auto& k = tensors.k;
  const auto& v = tensors.v;
  const auto& out = tensors.out;
  const auto& dout = tensors.dout;
  const auto& lse = tensors.lse;
  const auto& dq = tensors.dq;
  const auto& dk = tensors.dk;
  const auto& dv = tensors.dv;
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

}  // namespace engine
}  // namespace rfa
