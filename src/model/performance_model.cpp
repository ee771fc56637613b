// SPDX-License-Identifier: BSD-3-Clause
#include "model/performance_model.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "core/dtype.hpp"
#include "core/error.hpp"
#include "engine/head_routing.hpp"
#include "engine/needed_kv_plan.hpp"
#include "engine/rank_positions.hpp"
#include "layout/sequence_layout.hpp"
#include "model/tile_work_memo.hpp"

namespace rfa {
namespace model {
namespace {

using engine::AttentionConfig;

/// FLOPs per score and head, by FlashAttention's count: two per multiply-add of each product,
/// S = Q K^T and O = P V forward (4 d with one head dim), and the backward's S, dP = dO V^T,
/// dV, dK and dQ (10 d, 2.5 times the forward).
double forward_flops_per_score(const AttentionConfig& c) { return 2.0 * double(c.head_dim + c.dv()); }
double backward_flops_per_score(const AttentionConfig& c) { return 6.0 * double(c.head_dim) + 4.0 * double(c.dv()); }

double element_bytes(const AttentionConfig& c) { return double(dtype_size(c.dtype)); }

/// Seconds the kernels take for one block of `heads` query heads (over every batch), each score
/// `per_score` FLOPs.
double block_seconds(const MachineModel& m, const AttentionConfig& c, const PositionMap& q, const PositionMap& k,
                     double heads, double per_score, bool backward, TileWorkMemo& memo) {
  const double rate = backward ? m.backward_flops_per_s : m.forward_flops_per_s;
  const double tile = backward ? m.backward_masked_tile_cost : m.forward_masked_tile_cost;
  const double visible = backward ? m.backward_masked_visible_cost : m.forward_masked_visible_cost;
  const double row = backward ? m.backward_row_seconds : m.forward_row_seconds;
  // Per-sequence documents: each batch entry's share of the heads under its own rule.
  const std::int64_t entries = engine::mask_rule_entries(c);
  const double entry_heads = heads / double(entries);
  double seconds = 0;
  for (std::int64_t e = 0; e < entries; ++e) {
    const kernels::MaskRule rule = engine::mask_rule(c, e);
    const kernels::TileWork w = memo.count(rule, q, k, backward ? m.backward_tile : m.forward_tile);
    seconds += (w.full + tile * w.partial + visible * w.partial_visible) * entry_heads * per_score / rate +
               row * entry_heads * (w.rows + w.keys) / 2;
  }
  return seconds;
}

/// Whether ranks of a node share compute units (MachineModel::compute_units_per_node).
bool shares_units(const MachineModel& m) {
  return m.compute_units_per_node > 0 && m.compute_units_per_node < double(m.ranks_per_node);
}

/// Whether `units` shared units are whole ones, on each of which a job stays (shared_finish_times);
/// a fraction of units is shared among all jobs.
bool whole_units(double units) { return units >= 1.0 && units == std::floor(units); }

/// What the slowest rank gets of a unit while every rank of its node computes alike (1: a whole
/// one): on whole units, as shared_finish_times places them, the busiest unit's
/// ceil(ranks / units) ranks share it; on a fraction, units / ranks each.
double full_node_share(const MachineModel& m) {
  if (!shares_units(m)) return 1.0;
  const double units = m.compute_units_per_node, ranks = double(m.ranks_per_node);
  return whole_units(units) ? 1.0 / std::ceil(ranks / units) : units / ranks;
}

/// The jobs `jobs` (indices into `work`, seconds each on a unit of their own) started together
/// on `units` units they share evenly (processor sharing): while `busy` jobs run and `done` have
/// finished, each finished one takes `waiting_share` of a unit (it waits for the step's end
/// beside the others: MachineModel::waiting_rank_share), at most an even turn, and each running
/// one gets an even part of the rest, at most a whole unit and at least what a scheduler's even
/// turns among all of them would give. When each finishes, in finish[] at its index.
void processor_sharing(const std::vector<double>& work, const std::vector<std::size_t>& jobs, double units,
                       double waiting_share, std::vector<double>& finish) {
  std::vector<std::size_t> order = jobs;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return work[a] < work[b]; });
  double t = 0, progress = 0;  // time, and the work every unfinished job has done by then
  for (std::size_t i = 0; i < order.size(); ++i) {
    const double busy = double(order.size() - i), done = double(i);
    const double each = std::min(1.0, std::max((units - waiting_share * done) / busy, units / (busy + done)));
    const double w = work[order[i]];
    if (w > progress) t += (w - progress) / each;
    progress = std::max(progress, w);
    finish[order[i]] = t;
  }
}

/// Jobs of `work` seconds each (on a unit of its own) started together on `units` shared units:
/// when each finishes. A job stays on one unit, as a process stays on a core (the scheduler
/// evens out how many run on each core, not how long each has run: three ranks on two cores
/// run two on one core at half speed) or a rank on its GPU; with a whole number of units the
/// jobs are placed longest first, each on the unit with the least work so far (of two alike,
/// the one with fewer jobs: a job with nothing to do waits where the others are fewest, as a
/// waking process goes to an idle core), and share their unit evenly. Over four and eight "nodes" on two cores that put
/// the contiguous causal ring, whose steps keep an odd number of ranks busy, within 1-14% where sharing every unit
/// among all jobs left it 9-16% fast (perf/RESULTS.md, "2026-12-02 (sixth session) — the kernels' calibration between
/// the rounds, on CPU time where ranks share cores"). A fractional count of units shares them all among all jobs. A job
/// done takes `waiting_share` of its unit (or of the shared units) while the others there run (processor_sharing).
std::vector<double> shared_finish_times(const std::vector<double>& work, double units, double waiting_share) {
  std::vector<double> finish(work.size(), 0.0);
  std::vector<std::size_t> all(work.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  if (!whole_units(units)) {
    processor_sharing(work, all, units, waiting_share, finish);
    return finish;
  }
  std::stable_sort(all.begin(), all.end(), [&](std::size_t a, std::size_t b) { return work[a] > work[b]; });
  std::vector<double> load(static_cast<std::size_t>(units), 0.0);
  std::vector<std::vector<std::size_t>> on_unit(load.size());
  for (std::size_t job : all) {
    std::size_t unit = 0;
    for (std::size_t u = 1; u < load.size(); ++u)
      if (load[u] < load[unit] || (load[u] == load[unit] && on_unit[u].size() < on_unit[unit].size())) unit = u;
    load[unit] += work[job];
    on_unit[unit].push_back(job);
  }
  for (const std::vector<std::size_t>& jobs : on_unit) processor_sharing(work, jobs, 1.0, waiting_share, finish);
  return finish;
}

/// Where the node's ranks share its units (shares_units), the ranks of this rank's node as
/// positions of a strategy over `ranks` ranks whose global rank is position * stride + place
/// (the hybrid's rings interleave; every ring's position p computes the same), this rank
/// first; otherwise empty.
std::vector<int> node_positions(const MachineModel& m, int ranks, int rank, int stride, int place) {
  std::vector<int> node;
  if (!shares_units(m)) return node;
  node.push_back(rank);
  const std::int64_t me = std::int64_t(rank) * stride + place;
  const std::int64_t first = me / m.ranks_per_node * m.ranks_per_node;
  for (std::int64_t g = first; g < first + m.ranks_per_node; ++g)
    if (g != me && g / stride < ranks) node.push_back(int(g / stride));
  return node;
}

/// This rank's kernel seconds (the first of `work`, the seconds each of its node's ranks needs
/// on a unit of its own) and when the last of them is done, the node's units shared.
std::pair<double, double> own_and_last(const std::vector<double>& work, const MachineModel& m) {
  const std::vector<double> finish = shared_finish_times(work, m.compute_units_per_node, m.waiting_rank_share);
  return {finish[0], *std::max_element(finish.begin(), finish.end())};
}

/// A point-to-point transfer of `bytes`; several in flight together share the link.
double transfer_seconds(const Link& link, double bytes) {
  return bytes > 0 ? link.latency_s + bytes / link.bytes_per_s : 0.0;
}

/// A collective over `ranks` ranks in which this rank sends `bytes` in all (all-to-all,
/// all-gather, reduce-scatter): one latency per peer, the bytes at the link's rate.
double collective_seconds(const Link& link, int ranks, double bytes) {
  return ranks > 1 ? double(ranks - 1) * link.latency_s + bytes / link.bytes_per_s : 0.0;
}

/// What a link's burst (Link::burst_bytes) saves `bytes` sent after the link stood idle `idle`
/// seconds: the bucket refills at the link's rate while it idles, up to the burst, and passes
/// what it holds at once.
double burst_saving(const Link& link, double idle, double bytes) {
  const double held = std::min(link.burst_bytes, std::max(0.0, idle) * link.bytes_per_s);
  return std::min(held, bytes) / link.bytes_per_s;
}

/// The link a group of `span` consecutive ranks (stride `stride`) uses: the network as soon as
/// it spans two nodes.
const Link& link_for(const MachineModel& m, int span, int stride) {
  return std::int64_t(span) * stride > m.ranks_per_node ? m.inter_node : m.intra_node;
}

/// What every rank of one prediction shares, found once: the ring's steps (the same on every
/// rank of a ring: engine::ring_steps_with_work), the keys each rank's queries see
/// (engine::seen_keys) for the needed-only exchange, and the blocks' tile work (TileWorkMemo).
class PredictionCache {
 public:
  PredictionCache(const AttentionConfig& c, int ranks) : c_(c), ranks_(ranks), seen_(std::size_t(ranks)) {}
  /// The ring's steps on `ranks` ranks for `config`: the problem, or the hybrid's ring of
  /// groups, whose config differs from it only in heads (which the steps do not depend on).
  const std::vector<int>& ring_steps(const AttentionConfig& config, int ranks) {
    auto found = steps_.find(ranks);
    if (found == steps_.end()) found = steps_.emplace(ranks, engine::ring_steps_with_work(config, ranks)).first;
    return found->second;
  }
  const std::vector<engine::KeySpan>& seen_keys(int rank) {
    auto& slot = seen_[std::size_t(rank)];
    if (!slot) slot = engine::seen_keys(c_, ranks_, rank);
    return *slot;
  }
  TileWorkMemo& tile_work() { return tile_work_; }

 private:
  const AttentionConfig& c_;
  int ranks_;
  std::map<int, std::vector<int>> steps_;
  std::vector<std::optional<std::vector<engine::KeySpan>>> seen_;
  TileWorkMemo tile_work_;
};

/// The ring (engine/ring_attention.hpp) on `ranks` ranks whose neighbours are `stride` global
/// ranks apart, for ring position `rank` (global rank rank * stride + place).
Prediction ring(const AttentionConfig& c, int ranks, int rank, int stride, int place, const MachineModel& m,
                PredictionCache& cache) {
  Prediction p;
  const std::vector<int>& steps = cache.ring_steps(c, ranks);
  const std::size_t n = steps.size();
  const std::int64_t L = layout::local_length(c.layout, c.seq_total, ranks);
  const PositionMap mine = engine::rank_positions(c, ranks, rank);
  const double kv_bytes = double(c.batch * L * c.kv_heads * (c.head_dim + c.dv())) * element_bytes(c);
  const double grad_bytes = double(c.batch * L * c.kv_heads * (c.head_dim + c.dv())) * 4.0;
  const Link& link = link_for(m, ranks, stride);
  const double heads = double(c.batch * c.heads);
  auto kernel_seconds = [&](const PositionMap& queries, int position, int s, bool backward) {
    const PositionMap block = engine::rank_positions(c, ranks, (position - s + ranks) % ranks);
    return block_seconds(m, c, queries, block, heads,
                         backward ? backward_flops_per_score(c) : forward_flops_per_score(c), backward,
                         cache.tile_work());
  };
  // Where ranks share their node's compute units, a step lasts until the node's last rank is
  // done, each rank's kernels sped up as others finish (processor sharing).
  const std::vector<int> node = node_positions(m, ranks, rank, stride, place);
  std::vector<PositionMap> node_rows;
  for (int position : node) node_rows.push_back(engine::rank_positions(c, ranks, position));
  // This rank's kernel seconds at step s and how long the step's compute lasts with `cpu`
  // seconds of every rank's transfer processing (Link::cpu_seconds_per_byte) beside it.
  auto step_compute = [&](int s, bool backward, double cpu) -> std::pair<double, double> {
    if (node.empty()) {
      const double own = kernel_seconds(mine, rank, s, backward);
      return {own, own + cpu};
    }
    std::vector<double> work(node.size());
    for (std::size_t j = 0; j < node.size(); ++j) work[j] = kernel_seconds(node_rows[j], node[j], s, backward);
    const auto kernels_alone = own_and_last(work, m);
    if (cpu == 0) return kernels_alone;
    for (double& w : work) w += cpu;
    return {kernels_alone.first, own_and_last(work, m).second};
  };
  double grads_in_flight = 0;  // dK/dV sent at the previous step, arriving during this one
  for (std::size_t i = 0; i < n; ++i) {
    const int s = steps[i];
    const double kv = i + 1 < n ? kv_bytes : 0.0;
    // Every rank sends and receives the step's bytes: half of each byte's processing at each end.
    const auto [f_own, f] = step_compute(s, false, link.cpu_seconds_per_byte * kv);
    const auto [b_own, b] = step_compute(s, true, link.cpu_seconds_per_byte * (kv + grads_in_flight));
    // A block's dK/dV partial starts at the second step's rank and goes on after every step
    // from then on, after the last one home.
    const double grads = i >= 1 ? grad_bytes : 0.0;
    const double kv_seconds = transfer_seconds(link, kv), both_seconds = transfer_seconds(link, kv + grads_in_flight);
    p.forward.compute_seconds += f_own;
    p.forward.seconds += std::max(f, kv_seconds);
    p.forward.bytes_sent += kv;
    p.forward.idle_link_seconds_at_end = std::max(0.0, f - kv_seconds);  // the last step sends nothing
    p.backward.compute_seconds += b_own;
    p.backward.seconds += std::max(b, both_seconds);
    p.backward.bytes_sent += kv + grads;
    p.backward.idle_link_seconds_at_end = std::max(0.0, b - both_seconds);
    grads_in_flight = grads;
  }
  // The last dK/dV on their way home, after the last step's kernels outlast its transfers.
  p.backward.seconds += transfer_seconds(link, grads_in_flight) -
                        burst_saving(link, p.backward.idle_link_seconds_at_end, grads_in_flight);
  if (grads_in_flight > 0) p.backward.idle_link_seconds_at_end = 0;
  return p;
}

/// Ulysses inside a group of `degree` consecutive ranks: the all-to-alls that take this
/// rank's `local_rows` rows of every head to the group's rows of its heads and back, and the
/// attention in between (`inner`: the whole sequence for Ulysses, the ring of groups for the
/// hybrid; its idle_link_seconds_at_end the time the all-to-alls' link stood idle before the
/// way home, whose first bytes a burst credits). engine/hybrid_attention.hpp (Ulysses is its
/// one-group grid) sends what is counted.
Prediction heads_exchange(const AttentionConfig& c, int degree, int place, std::int64_t local_rows,
                          const Prediction& inner, const MachineModel& m) {
  Prediction p = inner;
  const engine::HeadRouting routing(c.heads, c.kv_heads, degree);
  const double E = element_bytes(c), B = double(c.batch), rows = double(local_rows);
  const double D = double(c.head_dim), DV = double(c.dv());
  // Every tensor is packed for its all-to-all and placed after it, but for this rank's own
  // share, which moves once (its 1/degree of the heads): Q, K, V, out and lse forward; Q, K, V,
  // out, dO, lse, dQ and the fp32 dK, dV backward. lse goes whole through the all-to-all. Q, K,
  // dQ and dK have head dim D, V, out, dO and dV DV: each pair of a D and a DV tensor counts
  // D + DV values a row and head.
  const double H = double(c.heads), kv_all = double(routing.kv_count_total());
  const double rows_both = B * rows * (D + DV), moves = 2.0 - 1.0 / double(degree);
  const double forward_copies = moves * rows_both * E * (H + kv_all) + 2.0 * 4.0 * B * H * rows;
  const double backward_copies =
      moves * (rows_both * E * (2 * H + kv_all) + rows_both * 4.0 * double(routing.kv_count(place)) * double(degree)) +
      2.0 * 4.0 * B * H * rows;
  p.forward.seconds += forward_copies / m.copy_bytes_per_s;
  p.backward.seconds += backward_copies / m.copy_bytes_per_s;
  if (degree == 1) return p;
  const double others = double(degree - 1);
  const double heads_out = double(c.heads - routing.heads_per_rank());  // query heads sent away
  double kv_out = 0;                                                    // K/V heads sent away
  for (int r = 0; r < degree; ++r)
    if (r != place) kv_out += double(routing.kv_count(r));
  // Bytes each way of one value a row and head: Q, dQ (D), out, dO (DV); K (D) and V (DV) to
  // the heads; dK (D) and dV (DV) home in fp32.
  const double q = B * rows * heads_out * E, kv = B * rows * kv_out * E;
  const double lse = 4.0 * B * double(routing.heads_per_rank()) * rows * others;
  const double grad = 4.0 * B * rows * double(routing.kv_count(place)) * others;
  const Link& link = link_for(m, degree, 1);
  auto a2a = [&](double bytes) { return collective_seconds(link, degree, bytes); };
  // Out and lse forward, dQ, dK and dV backward go home after the inner attention.
  p.forward.seconds += a2a(q * D) + a2a(kv * D) + a2a(kv * DV) + a2a(q * DV) + a2a(lse) -
                       burst_saving(link, inner.forward.idle_link_seconds_at_end, q * DV + lse);
  p.forward.bytes_sent += (q + kv) * (D + DV) + lse;
  p.backward.seconds += a2a(q * D) + 2 * a2a(q * DV) + a2a(kv * D) + a2a(kv * DV) + a2a(lse) + a2a(q * D) +
                        a2a(grad * D) + a2a(grad * DV) -
                        burst_saving(link, inner.backward.idle_link_seconds_at_end, q * D + grad * (D + DV));
  p.backward.bytes_sent += (2 * q + kv + grad) * (D + DV) + lse;
  p.forward.idle_link_seconds_at_end = p.backward.idle_link_seconds_at_end = 0;
  return p;
}

/// One attention of this rank's heads over the whole sequence (Ulysses' local step).
Prediction whole_sequence(const AttentionConfig& c, double heads, const MachineModel& m, TileWorkMemo& memo) {
  Prediction p;
  const PositionMap all = PositionMap::contiguous(0, c.seq_total);
  const double scale = double(c.batch) * heads;
  // Every rank computes alike at once: each gets its share of the node's units.
  const double share = full_node_share(m);
  p.forward.compute_seconds = p.forward.seconds =
      block_seconds(m, c, all, all, scale, forward_flops_per_score(c), false, memo) / share;
  p.backward.compute_seconds = p.backward.seconds =
      block_seconds(m, c, all, all, scale, backward_flops_per_score(c), true, memo) / share;
  p.forward.idle_link_seconds_at_end = p.forward.seconds;  // it sends nothing
  p.backward.idle_link_seconds_at_end = p.backward.seconds;
  return p;
}

/// The KV all-gather (engine/allgather_attention.hpp): chunks of K/V heads gathered while the
/// previous chunk computes; in the backward each chunk's dK/dV reduce-scattered home, after the
/// chunk's kernels, during which the link stands idle once the next chunk's gather is done (a
/// burst's credit: Link::burst_bytes).
Prediction allgather(const AttentionConfig& c, std::int64_t chunk, int ranks, int rank, const MachineModel& m,
                     TileWorkMemo& memo) {
  Prediction p;
  const std::int64_t L = layout::local_length(c.layout, c.seq_total, ranks), chunks = c.kv_heads / chunk;
  const PositionMap mine = engine::rank_positions(c, ranks, rank);
  const PositionMap all = PositionMap::contiguous(0, c.seq_total);
  const double scale = double(c.batch * (c.heads / c.kv_heads) * chunk);
  // Calls over one K/V head's packed rows (MachineModel::packed_head_*_speedup). Where the
  // node's ranks share its units, each chunk's compute lasts until the node's last rank is done
  // (the next chunk's gather needs every rank).
  auto kernel_seconds = [&](const PositionMap& queries, bool backward) {
    return backward ? block_seconds(m, c, queries, all, scale, backward_flops_per_score(c), true, memo) /
                          m.packed_head_backward_speedup
                    : block_seconds(m, c, queries, all, scale, forward_flops_per_score(c), false, memo) /
                          m.packed_head_forward_speedup;
  };
  const double others = double(ranks - 1);
  const double both = double(c.batch * L * chunk * (c.head_dim + c.dv()));  // K and V, or dK and dV
  const double gather = both * element_bytes(c) * others;
  const double scatter = both * 4.0 * others;
  const Link& link = link_for(m, ranks, 1);
  // A chunk computes beside the next chunk's gather, every rank sending and receiving `gather`
  // bytes (half of each byte's processing at each end): how long its compute lasts with that
  // processing (f, b) and without, for the last chunk (f_last, b_last); this rank's kernels
  // alone (f_own, b_own).
  const double cpu = link.cpu_seconds_per_byte * gather;
  double f_own = kernel_seconds(mine, false), b_own = kernel_seconds(mine, true);
  double f_last = f_own, b_last = b_own, f = f_own + cpu, b = b_own + cpu;
  const std::vector<int> node = node_positions(m, ranks, rank, 1, 0);
  if (!node.empty()) {
    std::vector<double> fw, bw;
    for (int position : node) {
      const PositionMap rows = engine::rank_positions(c, ranks, position);
      fw.push_back(kernel_seconds(rows, false));
      bw.push_back(kernel_seconds(rows, true));
    }
    std::tie(f_own, f_last) = own_and_last(fw, m);
    std::tie(b_own, b_last) = own_and_last(bw, m);
    f = f_last, b = b_last;
    if (cpu > 0) {
      for (double& w : fw) w += cpu;
      for (double& w : bw) w += cpu;
      f = own_and_last(fw, m).second;
      b = own_and_last(bw, m).second;
    }
  }
  const double g = collective_seconds(link, ranks, gather);
  const double rs = collective_seconds(link, ranks, scatter);
  // Each chunk's K and V packed, then placed at their positions in the whole sequence; in the
  // backward also the fp32 dK and dV taken back out of it and put into this rank's heads.
  const double kv_chunk = double(c.batch * chunk * (c.head_dim + c.dv()));
  const double place = kv_chunk * element_bytes(c) * double(L + c.seq_total) / m.copy_bytes_per_s;
  const double take = kv_chunk * 4.0 * double(L + c.seq_total) / m.copy_bytes_per_s;
  for (std::int64_t ch = 0; ch < chunks; ++ch) {
    const bool more = ch + 1 < chunks;
    p.forward.seconds += place + (more ? std::max(f, g) : f_last);
    const double idle = (more ? std::max(0.0, b - g) : b_last) + take;
    p.backward.seconds += place + (more ? std::max(b, g) : b_last) + take + rs - burst_saving(link, idle, scatter);
  }
  p.forward.seconds += g;
  p.backward.seconds += g;
  p.forward.idle_link_seconds_at_end = f_last;  // the last chunk's kernels gather nothing
  p.forward.compute_seconds = f_own * double(chunks);
  p.backward.compute_seconds = b_own * double(chunks);
  p.forward.bytes_sent = gather * double(chunks);
  p.backward.bytes_sent = (gather + scatter) * double(chunks);
  return p;
}

/// The needed-only exchange (engine/needed_kv_attention.hpp): this rank's local block, then one
/// round per distance s in which it receives the rows its queries see from the rank s upstream
/// and sends the rank s downstream the rows of its own that rank sees. A round's exchange (the
/// larger of the two sides, at the link between the three ranks' nodes, after packing the rows
/// sent) travels while the round before it computes; in the backward the fp32 dK/dV of the
/// received rows travel home under the next round's compute, the last ones exposed, and are
/// added in on arrival. Rounds in which this rank moves nothing are free (its exchange then
/// completes at once), and its next round is taken to overlap its previous one. Every rank
/// computes at once, sharing its node's units.
Prediction needed(const AttentionConfig& c, int ranks, int rank, const MachineModel& m, PredictionCache& cache) {
  const PositionMap mine = engine::rank_positions(c, ranks, rank);
  const double heads = double(c.batch * c.heads), share = full_node_share(m);
  const double row_values = double(c.batch * c.kv_heads * (c.head_dim + c.dv()));  // one K and one V row
  const double E = element_bytes(c);
  auto kernel_seconds = [&](const PositionMap& keys, bool backward) {
    return block_seconds(m, c, mine, keys, heads, backward ? backward_flops_per_score(c) : forward_flops_per_score(c),
                         backward, cache.tile_work()) /
           share;
  };
  auto on_node = [&](int position) { return position / m.ranks_per_node; };
  struct Round {
    double forward = 0, backward = 0;  // the kernels on the received pieces
    double kv = 0, grads = 0;          // the exchanges: K/V in and out, dK/dV back and home
    double pack = 0, add = 0;          // packing the rows sent, adding their gradients in
    double sent = 0, returned = 0;     // bytes sent: K/V, and the received rows' dK/dV
    double kv_cpu = 0, grads_cpu = 0;  // this rank's share of the exchanges' processing
  };
  std::vector<Round> rounds;
  const std::vector<engine::KeySpan>& seen = cache.seen_keys(rank);
  for (int s = 1; s < ranks; ++s) {
    const int from = (rank - s + ranks) % ranks, to = (rank + s) % ranks;
    const engine::NeededTransfer in = engine::needed_transfer(c, ranks, seen, from);
    const double out_rows = double(engine::needed_transfer(c, ranks, cache.seen_keys(to), rank).rows);
    if (in.rows == 0 && out_rows == 0) continue;
    Round r;
    for (const engine::NeededPiece& piece : in.pieces) {
      r.forward += kernel_seconds(piece.positions, false);
      r.backward += kernel_seconds(piece.positions, true);
    }
    const Link& link = on_node(from) == on_node(rank) && on_node(to) == on_node(rank) ? m.intra_node : m.inter_node;
    const double most = std::max(double(in.rows), out_rows) * row_values;
    r.kv = transfer_seconds(link, most * E);
    r.grads = transfer_seconds(link, most * 4.0);
    r.pack = out_rows * row_values * E / m.copy_bytes_per_s;
    r.add = out_rows * row_values * 4.0 / m.copy_bytes_per_s;
    r.sent = out_rows * row_values * E;
    r.returned = double(in.rows) * row_values * 4.0;
    // Half of each byte's processing at each end, on the node's shared units like the kernels.
    const double moved = (double(in.rows) + out_rows) * row_values;
    r.kv_cpu = link.cpu_seconds_per_byte * moved * E / 2.0 / share;
    r.grads_cpu = link.cpu_seconds_per_byte * moved * 4.0 / 2.0 / share;
    rounds.push_back(r);
  }
  Prediction p;
  const std::size_t n = rounds.size();
  auto next_kv = [&](std::size_t i) { return i < n ? rounds[i].kv : 0.0; };  // round i's, started before i - 1 computes
  auto next_kv_cpu = [&](std::size_t i) { return i < n ? rounds[i].kv_cpu : 0.0; };
  p.forward.compute_seconds = kernel_seconds(mine, false);
  p.backward.compute_seconds = kernel_seconds(mine, true);
  p.forward.seconds = (n > 0 ? rounds[0].pack : 0.0) + std::max(p.forward.compute_seconds + next_kv_cpu(0), next_kv(0));
  p.backward.seconds =
      (n > 0 ? rounds[0].pack : 0.0) + std::max(p.backward.compute_seconds + next_kv_cpu(0), next_kv(0));
  for (std::size_t i = 0; i < n; ++i) {
    const Round& r = rounds[i];
    const double pack_next = i + 1 < n ? rounds[i + 1].pack : 0.0;
    const double grads_in_flight = i >= 1 ? rounds[i - 1].grads : 0.0;
    const double grads_cpu = i >= 1 ? rounds[i - 1].grads_cpu : 0.0;
    p.forward.compute_seconds += r.forward;
    p.forward.seconds += pack_next + std::max(r.forward + next_kv_cpu(i + 1), next_kv(i + 1));
    p.forward.bytes_sent += r.sent;
    p.backward.compute_seconds += r.backward;
    p.backward.seconds +=
        pack_next + r.add + std::max(r.backward + next_kv_cpu(i + 1) + grads_cpu, next_kv(i + 1) + grads_in_flight);
    p.backward.bytes_sent += r.sent + r.returned;
  }
  if (n > 0) p.backward.seconds += rounds[n - 1].grads;  // the last round's gradients on their way home
  return p;
}

/// predict_rank(), with what the prediction's ranks share in `cache`.
Prediction predict_rank_with(const AttentionConfig& c, const engine::StrategyChoice& choice, int ranks, int rank,
                             const MachineModel& m, PredictionCache& cache) {
  require(ranks >= 1 && rank >= 0 && rank < ranks, "rank ", rank, " is not a position of ", ranks, " ranks");
  require(m.ranks_per_node >= 1, "ranks_per_node must be at least 1, got ", m.ranks_per_node);
  require(m.compute_units_per_node >= 0, "compute_units_per_node must not be negative, got ", m.compute_units_per_node);
  require(m.waiting_rank_share >= 0 && m.waiting_rank_share <= 1, "waiting_rank_share must be from 0 to 1, got ",
          m.waiting_rank_share);
  require(m.forward_flops_per_s > 0 && m.backward_flops_per_s > 0, "kernel rates must be positive");
  require(m.forward_row_seconds >= 0 && m.backward_row_seconds >= 0, "the costs per row must not be negative");
  require(m.packed_head_forward_speedup > 0 && m.packed_head_backward_speedup > 0,
          "the packed-head speedups must be positive");
  require(m.intra_node.bytes_per_s > 0 && m.inter_node.bytes_per_s > 0, "link bandwidths must be positive");
  require(m.intra_node.cpu_seconds_per_byte >= 0 && m.inter_node.cpu_seconds_per_byte >= 0,
          "the links' CPU seconds per byte must not be negative");
  require(m.intra_node.burst_bytes >= 0 && m.inter_node.burst_bytes >= 0 && std::isfinite(m.intra_node.burst_bytes) &&
              std::isfinite(m.inter_node.burst_bytes),
          "the links' bursts must be finite and not negative");
  engine::validate_strategy(choice, c, ranks);
  switch (choice.kind) {
    case engine::StrategyKind::ring: return ring(c, ranks, rank, 1, 0, m, cache);
    case engine::StrategyKind::ulysses: {
      const engine::HeadRouting routing(c.heads, c.kv_heads, ranks);
      const Prediction local = whole_sequence(c, double(routing.heads_per_rank()), m, cache.tile_work());
      return heads_exchange(c, ranks, rank, layout::local_length(c.layout, c.seq_total, ranks), local, m);
    }
    case engine::StrategyKind::allgather:
      return allgather(c, std::max<std::int64_t>(1, choice.kv_heads_per_chunk), ranks, rank, m, cache.tile_work());
    case engine::StrategyKind::needed: return needed(c, ranks, rank, m, cache);
    case engine::StrategyKind::hybrid: {
      const int pu = choice.ulysses_degree, pr = ranks / pu;
      const engine::HeadRouting routing(c.heads, c.kv_heads, pu);
      AttentionConfig rc = c;
      rc.heads = routing.heads_per_rank();
      rc.kv_heads = routing.slots();
      Prediction inner = ring(rc, pr, rank / pu, pu, rank % pu, m, cache);
      // The ring of groups sends on the all-to-alls' link only where both cross the same kind.
      if (&link_for(m, pr, pu) != &link_for(m, pu, 1)) {
        inner.forward.idle_link_seconds_at_end = inner.forward.seconds;
        inner.backward.idle_link_seconds_at_end = inner.backward.seconds;
      }
      const std::int64_t rows = layout::local_length(c.layout, c.seq_total, pr) / pu;
      return heads_exchange(c, pu, rank % pu, rows, inner, m);
    }
  }
  fail(RFA_ERROR_INVALID_ARGUMENT, "unknown strategy");
}

}  // namespace

Prediction predict_rank(const AttentionConfig& c, const engine::StrategyChoice& choice, int ranks, int rank,
                        const MachineModel& m) {
  PredictionCache cache(c, ranks);
  return predict_rank_with(c, choice, ranks, rank, m, cache);
}

Prediction predict(const AttentionConfig& c, const engine::StrategyChoice& choice, int ranks, const MachineModel& m) {
  Prediction worst;
  PredictionCache cache(c, ranks);
  const int looked = std::min(ranks, 64);
  for (int i = 0; i < looked; ++i) {
    const int rank = looked == ranks ? i : int(std::int64_t(i) * (ranks - 1) / (looked - 1));
    const Prediction p = predict_rank_with(c, choice, ranks, rank, m, cache);
    for (auto [w, q] : {std::pair<PassPrediction*, const PassPrediction*>{&worst.forward, &p.forward},
                        std::pair<PassPrediction*, const PassPrediction*>{&worst.backward, &p.backward}}) {
      w->seconds = std::max(w->seconds, q->seconds);
      w->compute_seconds = std::max(w->compute_seconds, q->compute_seconds);
      w->bytes_sent = std::max(w->bytes_sent, q->bytes_sent);
    }
  }
  return worst;
}

}  // namespace model
}  // namespace rfa
