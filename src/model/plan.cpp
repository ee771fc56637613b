// SPDX-License-Identifier: BSD-3-Clause
#include "model/plan.hpp"

#include "kernels/bf16_products.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "core/environment.hpp"
#include "core/error.hpp"
#include "core/text_stream.hpp"
#include "engine/allgather_chunk.hpp"
#include "layout/sequence_layout.hpp"

namespace rfa {
namespace model {
namespace {

double step_seconds(const Plan& p) { return p.prediction.forward.seconds + p.prediction.backward.seconds; }

// The host preset's kernel costs beside the rate, from rfa_model_check's calibrations of the
// fp32 portable kernels across 2, 4 and 8 "nodes" (perf/RESULTS.md, "2026-12-03 (fifth
// session) — the host preset's cost per row and per cut tile": their medians). A call's cost
// per query or key row and head (MachineModel::forward_row_seconds) in FLOPs at the kernels'
// rate per value of the row's head dims (d + dv): it loads and packs the rows and finishes,
// writes or merges them, work that grows with the head dims as the scores' does.
constexpr double kForwardRowFlopsPerValue = 460, kBackwardRowFlopsPerValue = 660;
// What a tile the mask cuts costs per score, and per score it lets through, in whole tiles'
// scores (MachineModel::forward_masked_tile_cost, forward_masked_visible_cost).
constexpr double kForwardMaskedTileCost = 1.05, kForwardMaskedVisibleCost = 0.97;
constexpr double kBackwardMaskedTileCost = 0.73, kBackwardMaskedVisibleCost = 0.55;

}  // namespace

std::string Plan::name() const {
  std::string s = engine::strategy_name(choice.kind);
  if (choice.kind == engine::StrategyKind::hybrid)
    s += " " + std::to_string(choice.ulysses_degree) + " x " + std::to_string(ranks / choice.ulysses_degree);
  if (choice.kind == engine::StrategyKind::allgather && choice.kv_heads_per_chunk > 1)
    s += " (" + std::to_string(choice.kv_heads_per_chunk) + " K/V heads a chunk)";
  return s + ", " + layout::layout_name(layout);
}

std::vector<Plan> rank_plans(const engine::AttentionConfig& config, int ranks, const MachineModel& machine,
                             bool ring_only) {
  std::vector<engine::StrategyChoice> choices = {{engine::StrategyKind::ring, 0, 1}};
  if (!ring_only) {
    choices.push_back(engine::with_allgather_chunk({engine::StrategyKind::allgather, 0, 1}, config, ranks));
    if (ranks > 1) choices.push_back({engine::StrategyKind::ulysses, 0, 1});
    // Every grid, groups across nodes too: their all-to-alls then cost the link between nodes.
    for (int degree = 2; degree < ranks; ++degree)
      if (ranks % degree == 0) choices.push_back({engine::StrategyKind::hybrid, degree, 1});
  }
  // Where the mask can hide keys from whole ranks or leave the fixed layouts uneven (a window,
  // documents, ranges): the needed-only exchange (host contexts; validate_strategy refuses the
  // others), and the balanced layout. Under the causal mask alone or none every rank sees all
  // the keys upstream, and zigzag and stripe are already even.
  const bool sparse = config.window > 0 || config.doc_bounds.size() > 2 || !config.doc_offsets.empty() || config.ranges;
  if (!ring_only && sparse) choices.push_back({engine::StrategyKind::needed, 0, 1});
  std::vector<rfa_layout_t> layouts = {RFA_LAYOUT_ZIGZAG, RFA_LAYOUT_CONTIGUOUS, RFA_LAYOUT_STRIPE};
  if (sparse) layouts.push_back(RFA_LAYOUT_BALANCED);
  std::vector<Plan> plans;
  for (const engine::StrategyChoice& choice : choices)
    for (rfa_layout_t layout : layouts) {
      // Ulysses gathers the whole sequence: its layout changes nothing but the rows' order.
      if (choice.kind == engine::StrategyKind::ulysses && layout != RFA_LAYOUT_ZIGZAG) continue;
      engine::AttentionConfig c = config;
      c.layout = layout;
      try {
        engine::validate_strategy(choice, c, ranks);
      } catch (const Error&) {
        continue;  // this grid or layout does not fit the problem
      }
      plans.push_back(Plan{choice, layout, ranks, predict(c, choice, ranks, machine)});
    }
  std::stable_sort(plans.begin(), plans.end(),
                   [](const Plan& a, const Plan& b) { return step_seconds(a) < step_seconds(b); });
  return plans;
}

Plan choose_plan(const engine::AttentionConfig& config, int ranks, const MachineModel& machine, bool ring_only) {
  std::vector<Plan> plans = rank_plans(config, ranks, machine, ring_only);
  require(!plans.empty(), "no strategy fits S = ", config.seq_total, ", H = ", config.heads, " on ", ranks,
          " ranks (the sequence must split over the ranks, 2 * ranks for zigzag)");
  return plans.front();
}

std::string explain_plans(const std::vector<Plan>& plans) {
  if (plans.empty()) return "no plan fits";
  auto ms = [](double s) { return general_number(1e3 * s, 3); };
  const Plan& best = plans.front();
  std::string s = best.name() + ": predicted " + ms(best.prediction.forward.seconds) + " ms forward + " +
                  ms(best.prediction.backward.seconds) + " ms backward per rank (docs/performance-model.md)";
  for (std::size_t i = 1; i < plans.size() && i < 4; ++i)
    s += std::string(i == 1 ? "; then " : ", ") + plans[i].name() + " " + ms(plans[i].prediction.forward.seconds) +
         " + " + ms(plans[i].prediction.backward.seconds) + " ms";
  return s;
}

namespace {

/// What one number of a planning variable may be: from `low` to `high`, both included. The
/// bounds keep the model's predictions finite and meaningful (a rate of 1e-300 GFLOP/s or a
/// bandwidth of 1e300 GB/s would rank every plan alike or overflow); they are far outside any
/// machine's figures.
struct Bounds {
  double low, high;
};
/// One rank's kernel rate: 1 MFLOP/s to 1 EFLOP/s.
constexpr Bounds kRateGflops{1e-3, 1e9};
/// A link's bandwidth: 1 kB/s to 1 PB/s; its latency up to 10 s; the CPU time a byte's transfer
/// costs up to 1 ms; its burst up to 1 PB.
constexpr Bounds kBandwidthGbps{1e-6, 1e6}, kLatencyUs{0, 1e7}, kCpuNsPerByte{0, 1e6}, kBurstBytes{0, 1e15};

/// Comma-separated numbers from an environment variable, exactly `count` of them, the i-th
/// finite and within `bounds(i)`.
template <class BoundsOf>
std::vector<double> numbers(Env id, std::size_t count, const char* form, const char* rule, BoundsOf bounds) {
  const std::string text = env_text(id);
  std::vector<double> v;
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, comma - at);
    double x = 0.0;
    const bool read = parse_decimal(item.c_str(), &x);
    const Bounds b = bounds(v.size());
    const bool in_range = x >= b.low && x <= b.high;
    if (!read || !in_range || !std::isfinite(x))
      fail(RFA_ERROR_INVALID_ARGUMENT, env_name(id), " is '", text, "'; it must be ", form, ", ", rule);
    v.push_back(x);
    at = comma + 1;
  }
  if (v.size() != count)
    fail(RFA_ERROR_INVALID_ARGUMENT, env_name(id), " is '", text, "'; it must be ", form, " (", count, " numbers)");
  return v;
}

}  // namespace

HostBf16 host_bf16_here() {
  switch (kernels::allowed_bf16_products()) {
    case kernels::Bf16Products::amx_tiles: return HostBf16::amx_tiles;
    case kernels::Bf16Products::avx512_dot: return HostBf16::dot_products;
    case kernels::Bf16Products::none: break;
  }
  return HostBf16::portable;
}

MachineModel planning_machine(const engine::AttentionConfig& config, const PlanningHost& host) {
  const rfa_dtype_t dtype = config.dtype;
  MachineModel m;
  m.ranks_per_node = std::max(1, host.ranks_per_node);
  // How much faster than the portable kernels the host's bf16 products compute scores (1: the
  // portable kernels run the dtype), forward and backward.
  double forward_speedup = 1, backward_speedup = 1;
  if (config.device == engine::Device::cuda) {
    // rfa's CUDA kernels on an H100, bf16 and fp16 alike (perf/RESULTS.md), NVLink inside a
    // node, 400 Gb/s between.
    m.forward_flops_per_s = 275e12, m.backward_flops_per_s = 150e12;
    m.forward_tile = {128, 64, false}, m.backward_tile = {32, 128, false};
    m.intra_node = Link{3e-6, 450e9}, m.inter_node = Link{5e-6, 50e9};
  } else {
    // The host kernels' measured per-core rates, forward and backward (perf/RESULTS.md, the
    // summary's CPU kernel table): the portable kernels (fp32, fp16, and bf16 without bf16
    // hardware) at ~90 GFLOP/s on AVX-512; bf16 on AVX512-BF16 dot products 1.9x / 1.45x that
    // (Zen 4), on AMX tiles 5.3x / 3.0x (Sapphire Rapids). Shared memory inside a node, 100 Gb/s
    // between.
    double forward = 90e9, backward = 90e9;
    // The all-gather's calls over one packed K/V head against the others' interleaved heads
    // (perf/RESULTS.md, "2026-11-27 (evening) — the all-gather's calls over one packed head, and
    // the automatic choice again"): portable kernels
    // 1.02 / 1.03, AVX512-BF16 dot products 1.01 / 1.055; AMX tiles not measured (1).
    m.packed_head_forward_speedup = 1.02, m.packed_head_backward_speedup = 1.03;
    // A tile the mask cuts: the portable kernels' calibrated costs (above), for every dtype.
    m.forward_masked_tile_cost = kForwardMaskedTileCost, m.forward_masked_visible_cost = kForwardMaskedVisibleCost;
    m.backward_masked_tile_cost = kBackwardMaskedTileCost, m.backward_masked_visible_cost = kBackwardMaskedVisibleCost;
    if (dtype == RFA_DTYPE_BFLOAT16 && host.bf16 == HostBf16::dot_products) {
      forward_speedup = 1.9, backward_speedup = 1.45;
      m.packed_head_forward_speedup = 1.01, m.packed_head_backward_speedup = 1.055;
    }
    if (dtype == RFA_DTYPE_BFLOAT16 && host.bf16 == HostBf16::amx_tiles) {
      forward_speedup = 5.3, backward_speedup = 3.0;
      m.packed_head_forward_speedup = 1.0, m.packed_head_backward_speedup = 1.0;
    }
    const double threads = double(std::max(1, host.threads));
    m.forward_flops_per_s = forward * forward_speedup * threads;
    m.backward_flops_per_s = backward * backward_speedup * threads;
    if (host.compute_units_per_node > 0 && host.compute_units_per_node < double(m.ranks_per_node))
      m.compute_units_per_node = host.compute_units_per_node;
    m.intra_node = Link{2e-6, 8e9}, m.inter_node = Link{5e-6, 12.5e9};
  }
  if (env_value(Env::plan_kernel_rate)) {
    const std::vector<double> r =
        numbers(Env::plan_kernel_rate, 2, "FWD,BWD in GFLOP/s", "each from 0.001 to 1e9 (1 MFLOP/s to 1 EFLOP/s)",
                [](std::size_t) { return kRateGflops; });
    m.forward_flops_per_s = r[0] * 1e9, m.backward_flops_per_s = r[1] * 1e9;
  }
  if (env_value(Env::plan_links)) {
    // Four numbers, six with each link's CPU nanoseconds per byte (Link::cpu_seconds_per_byte), or
    // eight with that and each link's burst in bytes (Link::burst_bytes).
    const std::string text = env_text(Env::plan_links);
    const auto commas = std::count(text.begin(), text.end(), ',');
    const std::size_t per_link = commas >= 7 ? 4 : commas == 5 ? 3 : 2;
    // A link's bandwidth must be > 0; its latency, CPU cost and burst may be 0 (RDMA, shared memory).
    const Bounds link_bounds[4] = {kBandwidthGbps, kLatencyUs, kCpuNsPerByte, kBurstBytes};
    const std::vector<double> l = numbers(
        Env::plan_links, 2 * per_link, "GBPS,US,GBPS,US; GBPS,US,NS,GBPS,US,NS; or GBPS,US,NS,BYTES,GBPS,US,NS,BYTES",
        "each bandwidth from 1e-6 to 1e6 GB/s, latency from 0 to 1e7 us, CPU cost from 0 to 1e6 ns a byte and burst "
        "from 0 to 1e15 bytes",
        [&](std::size_t i) { return link_bounds[i % per_link]; });
    auto link = [&](std::size_t at) {
      return Link{l[at + 1] * 1e-6, l[at] * 1e9, per_link >= 3 ? l[at + 2] * 1e-9 : 0.0,
                  per_link == 4 ? l[at + 3] : 0.0};
    };
    m.intra_node = link(0), m.inter_node = link(per_link);
  }
  if (config.device == engine::Device::host) {
    // A call's cost per row and head beyond its scores, in FLOPs at the portable kernels' rate:
    // the rate planned with (RFA_PLAN_KERNEL_RATE's where given) over the bf16 products'
    // speed-up where they run the dtype, whose speed-up is taken to be in the scores alone
    // (their rows not measured). The threads of a rank share it as they share the scores.
    const double dims = double(config.head_dim + config.dv());
    m.forward_row_seconds = kForwardRowFlopsPerValue * dims * forward_speedup / m.forward_flops_per_s;
    m.backward_row_seconds = kBackwardRowFlopsPerValue * dims * backward_speedup / m.backward_flops_per_s;
  }
  return m;
}

std::vector<Plan> automatic_plans(const engine::AttentionConfig& config, int ranks, const PlanningHost& host) {
  const MachineModel machine = planning_machine(config, host);
  std::vector<Plan> plans = rank_plans(config, ranks, machine, /*ring_only=*/config.device != engine::Device::host);
  if (plans.empty()) {
    // Why: the refusal of the plan that asks the least (the ring over the contiguous layout),
    // with its code, so that a head dim or device the kernels lack is said as such rather
    // than as a sequence that does not split.
    engine::AttentionConfig c = config;
    c.layout = RFA_LAYOUT_CONTIGUOUS;
    try {
      engine::validate_strategy({engine::StrategyKind::ring, 0, 1}, c, ranks);
    } catch (const Error& e) {
      fail(e.code(),
           "the automatic strategy: no strategy fits; the ring over the contiguous layout, which asks the "
           "least, is refused: ",
           e.what());
    }
    fail(RFA_ERROR_INVALID_ARGUMENT, "the automatic strategy: no strategy fits seq_total = ", config.seq_total,
         " and heads = ", config.heads, " on ", ranks,
         " ranks (every layout needs seq_total divisible by the ranks, zigzag by twice their number)");
  }
  return plans;
}

}  // namespace model
}  // namespace rfa
