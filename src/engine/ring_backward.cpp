// SPDX-License-Identifier: BSD-3-Clause
// The ring backward (docs/architecture.md §3): the K/V blocks travel as in the forward
// (travelling_kv.hpp) and each block's dK/dV partial one step behind it
// (travelling_gradients.hpp); a rank computes each step's dQ into its own accumulator and its
// contribution to the held block's dK/dV. Both run only the steps some rank computes on
// (ring_steps_with_work()), jumping over the others.
#include <functional>
#include <type_traits>
#include <variant>

#include "core/profiling_region.hpp"
#include "engine/pass_timings.hpp"
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
void RingAttention::backward(const AnyBackwardTensors& tensors, RingMode mode) { backward_of(tensors, mode, {}); }

void RingAttention::backward_fp32_gradients(const AnyFp32GradientTensors& tensors,
                                            const std::function<void()>& before_first_step) {
  backward_of(tensors, RingMode::full, before_first_step);
}

template <class AnyTensors>
void RingAttention::backward_of(const AnyTensors& tensors, RingMode mode,
                                const std::function<void()>& before_first_step) {
  std::visit(
      [&](const auto& t) {
        with_block_compute<typename std::decay_t<decltype(t)>::memory_space>([&](auto& blocks) {
          naming_step_of_timeout("backward", [&] { run_backward(blocks, t, mode, before_first_step); });
        });
      },
      tensors);
}

// The schedule, shared by every backend (docs/architecture.md §8); `blocks` computes. Per
// step: the next K/V block and the travelling dK/dV partial start moving, this rank's dQ and
// its contribution to the held block's dK/dV are computed, the partial that arrived takes the
// contribution and moves on. At the end the partial of this rank's own block comes home.
template <class Compute, class T, class TGrad>
void RingAttention::run_backward(Compute& blocks,
                                 const BackwardTensors<T, typename Compute::memory_space, TGrad>& tensors,
                                 RingMode mode, const std::function<void()>& before_first_step) {
  using Space = typename Compute::memory_space;
  if constexpr (!std::is_same<TGrad, float>::value && Compute::kWritesStorageGradients) {
    if (direct_gradients()) {
      run_backward_in_place(blocks, tensors, mode, before_first_step);
      return;
    }
  }
  const AttentionConfig& c = config_;
  const std::int64_t L = local_seq_, B = c.batch, HKV = c.kv_heads, D = c.head_dim, DV = c.dv();
  const ScopedSeconds total = begin_pass();
  const int P = ranks(), me = position();
  const bool communicate = mode != RingMode::compute_only;
  const bool compute = mode != RingMode::comm_only;

  Workspace<Space> ws = blocks.workspace(workspace_pass(true, int(mode)));
  TravellingKV<T, Space> kv(ws, comm_, c, L, tensors.k, tensors.v, communicate, steps_);
  // dK/dV of this rank's own block: its step-0 contribution, and at the end the partial the
  // others summed.
  auto dk_home = fp32_sum(ws, "rfa::dk_home", tensors.dk, B, L, HKV, D);
  auto dv_home = fp32_sum(ws, "rfa::dv_home", tensors.dv, B, L, HKV, DV);
  TravellingGradients<Compute> grads(blocks, ws, comm_, c, L, dk_home, dv_home, communicate, steps_);
  auto dq_sum = fp32_sum(ws, "rfa::dq_acc", tensors.dq, B, L, c.heads, D);
  auto delta = ws.template tensor3<float>("rfa::delta", B, c.heads, L);
  blocks.prepare_backward(kernel_calls_, c.dtype, ws);
  agree_to_run(*agreement_, ws, [&] { check_pass_tensors(c, L, tensors); });
  if (before_first_step) before_first_step();

  blocks.fill(dq_sum, 0.0f);
  grads.zero();
  computing([&] { blocks.template delta<T>(block_params(c, P, me, me), tensors.dout, tensors.out, delta); });

  ExchangePoller poller;
  for (std::size_t i = 0; i < steps_.size(); ++i) {
    const int s = steps_[i];
    const ProfilingRegion region(ring_step_region("backward", s));
    current_step_ = s;
    timings_.bytes_sent += kv.start(i);
    grads.begin(i);
    const kernels::AttentionParams p = block_params(c, P, me, (me - s + P) % P);
    if (compute && kernels::classify_blocks_every_entry(p, p.q_pos, p.k_pos) != kernels::TileVisibility::hidden) {
      computing([&] {
        poller.watch(kv.pending_k(), kv.pending_v(), grads.pending_k(), grads.pending_v());
        if constexpr (Compute::kHoldsKeyGradients) {
          if (grads.arriving() && blocks.holds_key_gradients(p)) {
            grads.hold_in_backend();
            blocks.template backward_holding_key_gradients<T>(p, tensors.q, kv.k(), kv.v(), tensors.out, tensors.dout,
                                                              tensors.lse, dq_sum);
            return;
          }
        }
        if constexpr (Compute::kStoresKeyGradients) {
          const auto [dk_into, dv_into] = grads.contribution_written_over();
          blocks.template backward_storing_key_gradients<T>(p, tensors.q, kv.k(), kv.v(), tensors.out, tensors.dout,
                                                            tensors.lse, delta, dq_sum, dk_into, dv_into);
          return;
        }
        const auto [dk_into, dv_into] = grads.contribution();
        blocks.template backward<T>(p, tensors.q, kv.k(), kv.v(), tensors.out, tensors.dout, tensors.lse, delta, dq_sum,
                                    dk_into, dv_into, poller.hook());
      });
      ++timings_.steps_computed;
    }
    if (compute) poller.rethrow_if_failed();
    waiting([&] { grads.wait_arrival(); });
    computing([&] { grads.add_contribution(); });
    timings_.bytes_sent += grads.send_on();
    waiting([&] { kv.finish(i); });
  }
  waiting([&] { grads.wait_arrival(); });
  computing([&] { grads.add_home(); });
  if constexpr (!std::is_same<TGrad, float>::value) {
    blocks.template narrow<TGrad>(dq_sum, tensors.dq);
    blocks.template narrow<TGrad>(dk_home, tensors.dk);
    blocks.template narrow<TGrad>(dv_home, tensors.dv);
  }
}

// One step, one block: the backend writes its 16-bit gradients straight into the caller's dq,
// dk and dv. D = rowsum(dO * O) is computed only for rfa's kernels, which take the block where
// cuDNN declined it; cuDNN computes its own from out.
template <class Compute, class T, class TGrad>
void RingAttention::run_backward_in_place(Compute& blocks,
                                          const BackwardTensors<T, typename Compute::memory_space, TGrad>& tensors,
                                          RingMode mode, const std::function<void()>& before_first_step) {
  const AttentionConfig& c = config_;
  const ScopedSeconds total = begin_pass();
  Workspace<typename Compute::memory_space> ws = blocks.workspace(workspace_pass(true, int(mode)));
  auto delta = ws.template tensor3<float>("rfa::delta", c.batch, c.heads, local_seq_);
  blocks.set_gradients_in_place(true);
  blocks.prepare_backward(kernel_calls_, c.dtype, ws);
  agree_to_run(*agreement_, ws, [&] { check_pass_tensors(c, local_seq_, tensors); });
  if (before_first_step) before_first_step();
  // The one step with work is step 0 (ring_steps_with_work): this rank's own block, the one the
  // pass was planned for (kernel_calls_'s first).
  const kernels::AttentionParams& p = kernel_calls_.front();
  const ProfilingRegion region(ring_step_region("backward", 0));
  current_step_ = 0;
  if (mode == RingMode::comm_only) return;  // nothing moves in a pass of one step
  if (blocks.reads_delta(p)) computing([&] { blocks.template delta<T>(p, tensors.dout, tensors.out, delta); });
  computing([&] {
    blocks.template backward_final<T>(p, tensors.q, tensors.k, tensors.v, tensors.out, tensors.dout, tensors.lse, delta,
                                      tensors.dq, tensors.dk, tensors.dv, kernels::ProgressHook());
  });
  ++timings_.steps_computed;
}

}  // namespace engine
}  // namespace rfa
