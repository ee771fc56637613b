// SPDX-License-Identifier: BSD-3-Clause
// The ring forward (docs/architecture.md §3): step s computes this rank's queries against the K/V block
// that started s positions upstream while the block for step s+1 is already travelling, then
// merges the block's fp32 partial into the running output.
#include <functional>
#include <limits>
#include <type_traits>
#include <variant>

#include "core/profiling_region.hpp"
#include "engine/pass_timings.hpp"
#include "engine/ring_attention.hpp"
#include "engine/ring_block_compute.hpp"
#include "engine/strategy_checks.hpp"
#include "engine/travelling_kv.hpp"
#include "engine/workspace.hpp"
#include "kernels/tensor_checks.hpp"
#include "kernels/tile_visibility.hpp"

namespace rfa {
namespace engine {

void RingAttention::forward(const AnyForwardTensors& tensors, RingMode mode,
                            const std::function<void()>& before_first_step) {
  std::visit(
      [&](const auto& t) {
        with_block_compute<typename std::decay_t<decltype(t)>::memory_space>([&](auto& blocks) {
          naming_step_of_timeout("forward", [&] { run_forward(blocks, t, mode, before_first_step); });
        });
      },
      tensors);
}

// The schedule, shared by every backend: `blocks` is the "compute one block" seam and
// comm_ the "move one buffer" one (docs/architecture.md §8).
template <class Compute, class T>
void RingAttention::run_forward(Compute& blocks, const ForwardTensors<T, typename Compute::memory_space>& tensors,
                                RingMode mode, const std::function<void()>& before_first_step) {
  using Space = typename Compute::memory_space;
  const auto &q = tensors.q, &k = tensors.k, &v = tensors.v;
  const auto& out = tensors.out;
  const auto& lse = tensors.lse;
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
  blocks.prepare_forward(kernel_calls_, c.dtype, ws);
  agree_to_run(*agreement_, ws, [&] { check_pass_tensors(c, L, tensors); });
  if (before_first_step) before_first_step();
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
        ScopedCompute t(timings_);
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

}  // namespace engine
}  // namespace rfa
