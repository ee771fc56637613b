// SPDX-License-Identifier: BSD-3-Clause
#include "engine/rank_positions.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <tuple>
#include <utility>

#include "core/documents.hpp"
#include "core/error.hpp"
#include "engine/placement_refinement.hpp"
#include "layout/chunk_placement.hpp"
#include "layout/sequence_layout.hpp"

namespace rfa {
namespace engine {

namespace {

/// What a balanced placement depends on: the ring size and every field that moves the mask's
/// visible pairs, by value (lists by count and hash, as the ranks agree on them). A config
/// copied and given another mask therefore never finds a stale placement in the cache its
/// copies share.
using PlacementKey = std::tuple<int, std::int64_t, std::int64_t, int, std::int64_t, std::int64_t, std::int64_t,
                                std::int64_t, std::int64_t, std::int64_t, std::int64_t>;

PlacementKey placement_key(const AttentionConfig& c, int ranks) {
  return {ranks,
          c.seq_total,
          c.batch,
          int(c.mask),
          c.window,
          c.ranges ? std::int64_t(c.ranges->entries().size()) : -1,
          c.ranges ? c.ranges->hash() : 0,
          std::int64_t(c.doc_bounds.size()),
          document_bounds_hash(c.doc_bounds.data(), std::int64_t(c.doc_bounds.size())),
          std::int64_t(c.doc_offsets.size()),
          document_bounds_hash(c.doc_offsets.data(), std::int64_t(c.doc_offsets.size()))};
}

}  // namespace

layout::ChunkPlacement solve_balanced_placement(const AttentionConfig& c, int ranks, RefinementReport* report) {
  RefinementInputs in;
  in.chunk_pairs = balanced_chunk_work(c, ranks);
  in.seq_len = c.seq_total;
  layout::ChunkPlacement start = layout::place_chunks_by_work(in.chunk_pairs, c.seq_total, ranks);
  // Every entry with per-sequence documents, else entry 0's rule for all; without a mask every
  // tile is whole and the pairs alone say the work.
  const std::int64_t entries = mask_rule_entries(c);
  for (std::int64_t e = 0; e < entries; ++e) {
    const kernels::MaskRule rule = mask_rule(c, e);
    if (rule.any()) in.rules.push_back({rule, 1.0});
  }
  return refine_placement(std::move(start), in, report);
}

class PlacementCache {
 public:
  const layout::ChunkPlacement& get(const AttentionConfig& c, int ranks) {
    const PlacementKey key = placement_key(c, ranks);
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = placements_.find(key);
    if (found == placements_.end()) found = placements_.emplace(key, solve_balanced_placement(c, ranks)).first;
    return found->second;
  }

 private:
  std::mutex mutex_;
  std::map<PlacementKey, layout::ChunkPlacement> placements_;  // node-based: references stay valid
};

std::shared_ptr<PlacementCache> new_placement_cache() { return std::make_shared<PlacementCache>(); }

namespace {

/// The keys query q sees under `rule` (causal or not, window, documents, ranges) in a sequence of S.
std::int64_t visible_keys(const kernels::MaskRule& rule, std::int64_t q, std::int64_t S,
                          std::vector<std::pair<std::int64_t, std::int64_t>>& row) {
  std::int64_t lo = 0, hi = 0;
  rule.key_bounds(q, q, S, lo, hi);
  if (lo > hi) return 0;
  if (!rule.ranges.on) return hi - lo + 1;
  visible_key_intervals(rule.ranges, q, lo, hi, row);
  std::int64_t seen = 0;
  for (const auto& [first, last] : row) seen += last - first + 1;
  return seen;
}

/// A deterministic offset in [0, n) for sample i of chunk c (splitmix64), so that the samples
/// of a long chunk do not fall in step with a periodic mask.
std::int64_t jitter(std::int64_t c, std::int64_t i, std::int64_t n) {
  std::uint64_t z = std::uint64_t(c) * 0x9E3779B97F4A7C15ull + std::uint64_t(i) + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return std::int64_t((z ^ (z >> 31)) % std::uint64_t(n));
}

}  // namespace

std::vector<double> balanced_chunk_work(const AttentionConfig& c, int ranks) {
  const std::int64_t S = c.seq_total, chunks = std::int64_t(layout::kBalancedChunksPerRank) * ranks,
                     length = S / chunks;
  // Sums of up to S^2 pairs: doubles (exact below 2^53, and summed in one order on every rank).
  std::vector<double> work(static_cast<std::size_t>(chunks), 0.0);
  // Without per-sequence documents every entry has entry 0's rule: count it once, batch times.
  const std::int64_t entries = mask_rule_entries(c);
  const double weight = entries == 1 ? double(c.batch) : 1.0;
  // Every query counted where the sequence is short; beyond kSampleBudget queries over all
  // rules, each chunk counts `samples` strata of equal size per rule, one jittered query each,
  // weighted by the stratum's size: creation stays bounded for any S and batch, and the
  // placement the same on every rank.
  constexpr std::int64_t kSampleBudget = std::int64_t(1) << 20;
  const std::int64_t samples =
      std::min(length, std::max<std::int64_t>(kSampleBudget / chunks / std::max<std::int64_t>(entries, 1), 1));
  std::vector<std::pair<std::int64_t, std::int64_t>> row;
  for (std::int64_t e = 0; e < entries; ++e) {
    const kernels::MaskRule rule = mask_rule(c, e);
    for (std::int64_t k = 0; k < chunks; ++k) {
      double total = 0;
      for (std::int64_t i = 0; i < samples; ++i) {
        const std::int64_t begin = k * length + i * length / samples, end = k * length + (i + 1) * length / samples;
        const std::int64_t q = begin + (end - begin > 1 ? jitter(k, i, end - begin) : 0);
        total += double(end - begin) * double(visible_keys(rule, q, S, row));
      }
      work[std::size_t(k)] += weight * total;
    }
  }
  return work;
}

const layout::ChunkPlacement& balanced_placement(const AttentionConfig& c, int ranks) {
  layout::validate_shape(RFA_LAYOUT_BALANCED, c.seq_total, ranks);
  require(c.placements != nullptr, "internal: a balanced layout's config has no placement cache");
  return c.placements->get(c, ranks);
}

PositionMap rank_positions(const AttentionConfig& c, int ranks, int position) {
  if (c.layout != RFA_LAYOUT_BALANCED) return layout::positions(c.layout, c.seq_total, ranks, position);
  layout::validate(c.layout, c.seq_total, ranks, position);
  return balanced_placement(c, ranks).positions(position);
}

}  // namespace engine
}  // namespace rfa
