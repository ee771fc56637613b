// SPDX-License-Identifier: BSD-3-Clause
// make_strategy(): the one place that turns a StrategyChoice into an engine
// (engine/attention_strategy.hpp).
#include <string>
#include <type_traits>

#include "comm/agreement.hpp"
#include "core/error.hpp"
#include "core/view_limits.hpp"
#include "engine/allgather_attention.hpp"
#include "engine/attention_strategy.hpp"
#include "engine/head_routing.hpp"
#include "engine/hybrid_attention.hpp"
#include "engine/needed_kv_attention.hpp"
#include "engine/ring_attention.hpp"

namespace rfa {
namespace engine {
namespace {

/// Any engine with the common members, whose forward and backward take the pass's tensors in any
/// dtype and memory space (pass_tensors.hpp), behind AttentionStrategy. The benchmark's schedule modes are the ring's
/// (RingAttention).
template <class Engine>
class StrategyOf final : public AttentionStrategy {
  static constexpr bool kRing = std::is_same<Engine, RingAttention>::value;

 public:
  template <class... Args>
  StrategyOf(StrategyKind kind, Args&&... args) : kind_(kind), engine_(std::forward<Args>(args)...) {}

  StrategyKind kind() const override { return kind_; }
  const AttentionConfig& config() const override { return engine_.config(); }
  int position() const override { return engine_.position(); }
  int ranks() const override { return engine_.ranks(); }
  std::int64_t local_seq() const override { return engine_.local_seq(); }
  PositionMap local_positions() const override { return engine_.local_positions(); }
  const PassTimings& last_timings() const override { return engine_.last_timings(); }
  std::int64_t workspace_bytes(bool backward) const override { return engine_.workspace_bytes(backward); }
  std::int64_t last_workspace_bytes() const override { return engine_.last_workspace_bytes(); }
  std::int64_t kernel_workspace_bytes(bool backward) const override { return engine_.kernel_workspace_bytes(backward); }
  std::int64_t held_workspace_bytes() const override { return engine_.held_workspace_bytes(); }
  void release_workspace() override { engine_.release_workspace(); }
  bool transfers_abandoned() const override { return engine_.transfers_abandoned(); }
  void set_cuda_stream(void* stream) override { engine_.set_cuda_stream(stream); }
  void* cuda_stream() const override { return engine_.cuda_stream(); }

 private:
  /// Same verdict on every rank (the mode is the caller's, the same everywhere).
  void require_full(RingMode mode) const {
    if (mode != RingMode::full)
      fail(RFA_ERROR_UNSUPPORTED, "the schedules without communication or without compute are the ring's; the ",
           strategy_name(kind_), " strategy runs only in full");
  }

  void run_forward(const AnyForwardTensors& tensors, RingMode mode) override {
    if constexpr (kRing) {
      engine_.forward(tensors, mode);
    } else {
      require_full(mode);
      engine_.forward(tensors);
    }
  }
  void run_backward(const AnyBackwardTensors& tensors, RingMode mode) override {
    if constexpr (kRing) {
      engine_.backward(tensors, mode);
    } else {
      require_full(mode);
      engine_.backward(tensors);
    }
  }

  StrategyKind kind_;
  Engine engine_;
};

}  // namespace

const char* strategy_name(StrategyKind kind) {
  switch (kind) {
    case StrategyKind::ring: return "ring";
    case StrategyKind::ulysses: return "ulysses";
    case StrategyKind::allgather: return "allgather";
    case StrategyKind::hybrid: return "hybrid";
    case StrategyKind::needed: return "needed";
  }
  return "unknown strategy";
}

namespace {

/// The Pu x P/Pu grid's rules (engine/hybrid_attention.hpp). One ring group (Pu = P, Ulysses):
/// the layout applies over all P ranks and every rank attends over the whole sequence.
/// Several: the layout applies over the ring groups, whose rows divide among their Pu ranks.
void validate_grid(const AttentionConfig& c, int ranks, int degree) {
  const int rings = ranks / degree;
  if (rings == 1) {
    validate_local(c, ranks);
    HeadRouting(c.heads, c.kv_heads, ranks);  // heads must divide by P
    require_view_extents("q on the full sequence", {c.batch, c.seq_total, c.heads / ranks, c.head_dim});
    require_view_extents("lse on the full sequence", {c.batch, c.heads / ranks, c.seq_total});
    return;
  }
  validate_local(c, rings);
  const std::int64_t group_rows = c.seq_total / rings;
  require(group_rows % degree == 0, "seq_total (", c.seq_total, ") gives each of the ", rings, " ring groups ",
          group_rows, " rows, which do not divide among its ", degree,
          " Ulysses ranks: choose seq_total a multiple of ", std::int64_t(rings) * degree,
          " (times 2 for zigzag) or another ulysses_degree");
  HeadRouting(c.heads, c.kv_heads, degree);  // heads must divide by Pu
  require_view_extents("q of a ring group", {c.batch, group_rows, c.heads / degree, c.head_dim});
  require_view_extents("lse of a ring group", {c.batch, c.heads / degree, group_rows});
}

}  // namespace

void validate_strategy(const StrategyChoice& choice, const AttentionConfig& c, int ranks) {
  const int degree = choice.ulysses_degree;
  switch (choice.kind) {
    case StrategyKind::ring:
    case StrategyKind::allgather:
    case StrategyKind::needed:
      require(degree == 0, "ulysses_degree is ", degree, " but the ", strategy_name(choice.kind),
              " strategy has no Ulysses groups: set it to 0, or choose the ulysses or hybrid strategy");
      require(choice.kv_heads_per_chunk >= 1 && c.kv_heads % choice.kv_heads_per_chunk == 0, "kv_heads_per_chunk (",
              choice.kv_heads_per_chunk, ") must divide kv_heads (", c.kv_heads,
              "): choose 1 (least memory) up to kv_heads (fewest, largest gathers)");
      if (choice.kind == StrategyKind::allgather && c.device == Device::cuda && c.cuda_kernels == CudaKernels::cudnn)
        fail(RFA_ERROR_UNSUPPORTED,
             "the KV all-gather computes its chunks with rfa's CUDA kernels, not cuDNN: set cuda_kernels to "
             "RFA_CUDA_KERNELS_RFA (rfa_run --kernels rfa) or leave it automatic, or choose another strategy");
      if (choice.kind == StrategyKind::needed && c.device != Device::host)
        fail(RFA_ERROR_UNSUPPORTED,
             "the needed-only exchange runs on host contexts only: choose the ring (which also skips the steps "
             "no rank needs) or another strategy on a CUDA context");
      validate_local(c, ranks);
      if (choice.kind == StrategyKind::allgather) {  // every rank gathers the whole sequence's K/V
        require_view_extents("gathered k", {c.batch, c.seq_total, choice.kv_heads_per_chunk, c.head_dim});
        require_view_extents("gathered v", {c.batch, c.seq_total, choice.kv_heads_per_chunk, c.dv()});
      }
      return;
    case StrategyKind::ulysses:
      require(degree == 0 || degree == ranks, "ulysses_degree is ", degree, " but the Ulysses strategy runs over all ",
              ranks, " ranks: set it to 0 (or ", ranks, "), or choose the hybrid strategy for a ", degree, " x ",
              degree > 0 ? ranks / degree : 0, " grid");
      validate_grid(c, ranks, ranks);
      return;
    case StrategyKind::hybrid:
      require(degree >= 1 && ranks % degree == 0, "ulysses_degree is ", degree, " but the hybrid strategy needs a ",
              "Ulysses degree Pu >= 1 that divides the ", ranks,
              " ranks (a Pu x P/Pu grid; Pu = ranks per node is "
              "usual)");
      validate_grid(c, ranks, degree);
      return;
  }
  fail(RFA_ERROR_INVALID_ARGUMENT, "unknown strategy value ", int(choice.kind));
}

void agree_on_strategy(comm::Communicator& comm, const AttentionConfig& config, const StrategyChoice& choice) {
  require_same_config(comm, config);
  comm::require_same_everywhere(comm, {{"strategy", std::int64_t(choice.kind)},
                                       {"ulysses_degree", std::int64_t(choice.ulysses_degree)},
                                       {"kv_heads_per_chunk", choice.kv_heads_per_chunk}});
  comm::check_everywhere(comm, [&] { validate_strategy(choice, config, comm.size()); });
}

std::unique_ptr<AttentionStrategy> make_strategy(comm::Communicator& comm, const AttentionConfig& config,
                                                 const StrategyChoice& choice) {
  agree_on_strategy(comm, config, choice);
  switch (choice.kind) {
    case StrategyKind::ring: return std::make_unique<StrategyOf<RingAttention>>(choice.kind, comm, config);
    case StrategyKind::allgather:
      return std::make_unique<StrategyOf<AllGatherAttention>>(choice.kind, comm, config, choice.kv_heads_per_chunk);
    case StrategyKind::needed: return std::make_unique<StrategyOf<NeededKvAttention>>(choice.kind, comm, config);
    case StrategyKind::ulysses:  // the hybrid's grid of one ring group
    case StrategyKind::hybrid: return std::make_unique<StrategyOf<HybridAttention>>(choice.kind, comm, config, choice);
  }
  fail(RFA_ERROR_INVALID_ARGUMENT, "unknown strategy value ", int(choice.kind));
}

}  // namespace engine
}  // namespace rfa
