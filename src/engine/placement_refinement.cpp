// SPDX-License-Identifier: BSD-3-Clause
#include "engine/placement_refinement.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

#include "core/error.hpp"

namespace rfa {
namespace engine {
namespace {

/// Swaps counted exactly per batch: a step keeps the best of the first batch, in the estimate's
/// order, that holds a swap that is progress.
constexpr int kCandidatesPerStep = 32, kBatchesPerStep = 4;

/// A rank's load in the refinement's power sum: high enough that the sum follows the busiest
/// rank, finite so that ranks tied at the top still show progress when one of them drops.
constexpr double kLoadPower = 16;

/// The three measures of a rank, or of a chunk's estimate.
struct Measures {
  double pairs = 0, forward = 0, backward = 0;
};

/// A rank's load: the largest of its measures, each over its normalizer.
double load(const Measures& m, const Measures& norm) {
  return std::max({m.pairs / norm.pairs, m.forward / norm.forward, m.backward / norm.backward});
}

/// The ranks' mean of each measure (1 for a measure no rank has any of: it cannot be uneven).
Measures means(const std::vector<Measures>& ranks) {
  Measures total;
  for (const Measures& m : ranks) {
    total.pairs += m.pairs;
    total.forward += m.forward;
    total.backward += m.backward;
  }
  const double n = double(ranks.size());
  return {total.pairs > 0 ? total.pairs / n : 1, total.forward > 0 ? total.forward / n : 1,
          total.backward > 0 ? total.backward / n : 1};
}

/// The ranks' loads (shares of today's means) in one number: the largest, and the power sum
/// that breaks its ties; and the busiest work, each measure over the start's mean.
struct Objective {
  double max = 0, power_sum = 0;
  double pairs = 0;         ///< the busiest rank's share of the visible pairs
  double busiest_work = 0;  ///< the largest of any rank's measures over the start's mean
};

Objective objective(const std::vector<Measures>& ranks, const Measures& start_means) {
  const Measures norm = means(ranks);
  Objective o;
  for (const Measures& m : ranks) o.busiest_work = std::max(o.busiest_work, load(m, start_means));
  for (const Measures& m : ranks) {
    o.pairs = std::max(o.pairs, m.pairs / norm.pairs);
    const double l = load(m, norm);
    o.max = std::max(o.max, l);
    o.power_sum += std::pow(l, kLoadPower);
  }
  return o;
}

/// The busiest share above which a refinement that stops tries the second start.
constexpr double kSecondStartAbove = 1.05;

/// The share of the visible pairs any rank may reach while the tiles are evened (unless the
/// start's is higher): the target the layout keeps for the visible work per rank.
constexpr double kPairsShareBound = 1.05;

/// A swap is progress when no rank's share rises above today's busiest share, no rank's work
/// above today's busiest work, the busiest rank's pairs stay within kPairsShareBound (or the
/// start's share), and the power sum of the shares drops.
bool better(const Objective& candidate, const Objective& today, const Objective& start) {
  return candidate.max <= today.max * (1 + 1e-12) && candidate.busiest_work <= today.busiest_work * (1 + 1e-12) &&
         candidate.pairs <= std::max(kPairsShareBound, start.pairs) &&
         candidate.power_sum < today.power_sum * (1 - 1e-12);
}

class Refiner {
 public:
  Refiner(layout::ChunkPlacement placement, const RefinementInputs& in)
      : in_(in), p_(std::move(placement)), ranks_(int(p_.chunks.size())) {
    owner_.assign(in.chunk_pairs.size(), -1);
    for (int r = 0; r < ranks_; ++r)
      for (const std::int64_t c : p_.chunks[std::size_t(r)]) owner_[std::size_t(c)] = r;
    for (const int r : owner_) require(r >= 0, "internal: a chunk of the placement has no rank");
  }

  /// Each rank's measures (after run()), and each chunk's estimate (empty where run() counted
  /// too little to make them).
  const std::vector<Measures>& loads() const { return loads_; }
  const std::vector<Measures>& estimates() const { return estimate_; }
  /// Whether run() counted the start and the estimates, and so searched and reported shares.
  bool searched() const { return searched_; }

  layout::ChunkPlacement run(RefinementReport& report) {
    if (ranks_ < 2 || in_.rules.empty()) return std::move(p_);
    if (!count_start() || !estimate_chunks()) {
      report.out_of_budget = true;
      report.operations = counted_;
      for (std::vector<std::int64_t>& mine : p_.chunks) std::sort(mine.begin(), mine.end());
      return std::move(p_);
    }
    searched_ = true;
    // A swap counts 4P - 4 of the start's P^2 blocks per pass; each counted swap says the next's.
    double swap_operations = start_operations_ * double(4 * ranks_ - 4) / (double(ranks_) * double(ranks_));
    shares(report.pairs_before, report.forward_before, report.backward_before);
    start_means_ = means(loads_);
    const Objective start = objective(loads_, start_means_);
    Objective today = start;
    report.load_before = report.load_after = today.max;
    const int max_steps = 4 * int(owner_.size());
    for (int step = 0; step < max_steps; ++step) {
      const int busiest = busiest_rank();
      const std::vector<std::pair<std::int64_t, std::int64_t>> swaps = candidates(busiest);
      Swap best;
      Objective best_objective = today;
      bool found = false;
      for (std::size_t i = 0; i < swaps.size(); ++i) {
        // The best of the first batch that holds one; none in kBatchesPerStep batches: stop.
        if (i % kCandidatesPerStep == 0 && (found || i == std::size_t(kCandidatesPerStep * kBatchesPerStep))) break;
        const auto& [x, y] = swaps[i];
        if (counted_ + swap_operations > in_.operation_budget) {
          report.out_of_budget = true;
          break;
        }
        const double before = counted_;
        Swap s = count_swap(x, y);
        ++report.tried;
        if (!s.counted) continue;
        swap_operations = counted_ - before;
        const Objective o = objective(s.loads, start_means_);
        if (better(o, best_objective, start)) {
          best = std::move(s);
          best_objective = o;
          found = true;
        }
      }
      if (!found) break;
      apply(best);
      today = best_objective;
      report.load_after = today.max;
      ++report.swaps;
      if (report.out_of_budget) break;
    }
    report.operations = counted_;
    shares(report.pairs_after, report.forward_after, report.backward_after);
    for (std::vector<std::int64_t>& mine : p_.chunks) std::sort(mine.begin(), mine.end());
    return std::move(p_);
  }

 private:
  /// A counted swap: chunk x (rank a) for chunk y (rank b), the two ranks' new rows and blocks.
  struct Swap {
    std::int64_t x = -1, y = -1;
    bool counted = false;  ///< false: rank a's own load did not drop, and nothing else was counted
    int a = -1, b = -1;
    std::vector<std::int64_t> chunks_a, chunks_b;
    PositionMap map_a, map_b;
    /// Per pass (0 forward, 1 backward): rank a's and b's new rows of blocks against every
    /// rank, and every rank's new blocks against a's and b's keys.
    std::vector<double> row_a[2], row_b[2], col_a[2], col_b[2];
    std::vector<Measures> loads;
  };

  kernels::TileShape tile(int pass) const { return pass == 0 ? in_.forward : in_.backward; }

  /// The computed scores of queries `q` against keys `k` in one pass, over the rules.
  double block(const PositionMap& q, const PositionMap& k, int pass) {
    double scores = 0;
    for (const WeightedRule& r : in_.rules)
      scores += r.weight * kernels::computed_scores(r.rule, q, k, tile(pass), &counted_);
    return scores;
  }

  /// Every block of the start, row by row; false as soon as the budget is spent.
  bool count_start() {
    maps_.clear();
    for (int r = 0; r < ranks_; ++r) maps_.push_back(p_.positions(r));
    // One block says about what the start's 2P^2 will cost: where they would spend more than
    // half the budget, too little would be left to swap, and nothing more is counted.
    double one = 0;
    for (const WeightedRule& r : in_.rules) kernels::computed_scores(r.rule, maps_[0], maps_[0], tile(0), &one);
    counted_ += one;
    if (one * 2 * double(ranks_) * double(ranks_) > in_.operation_budget / 2) return false;
    for (int pass = 0; pass < 2; ++pass) {
      blocks_[pass].assign(std::size_t(ranks_) * std::size_t(ranks_), 0.0);
      for (int r = 0; r < ranks_; ++r) {
        for (int s = 0; s < ranks_; ++s) at(pass, r, s) = block(maps_[std::size_t(r)], maps_[std::size_t(s)], pass);
        if (counted_ > in_.operation_budget) return false;
      }
    }
    start_operations_ = counted_;
    loads_.assign(std::size_t(ranks_), Measures{});
    for (int r = 0; r < ranks_; ++r) loads_[std::size_t(r)] = rank_measures(r);
    return true;
  }

  double& at(int pass, int q, int k) { return blocks_[pass][std::size_t(q) * std::size_t(ranks_) + std::size_t(k)]; }

  Measures rank_measures(int r) {
    Measures m;
    for (const std::int64_t c : p_.chunks[std::size_t(r)]) m.pairs += in_.chunk_pairs[std::size_t(c)];
    for (int s = 0; s < ranks_; ++s) {
      m.forward += at(0, r, s);
      m.backward += at(1, r, s);
    }
    return m;
  }

  /// Each chunk's estimate: its pairs, and its queries' computed scores against the whole
  /// sequence in one block, scaled so that the chunks' sums match the ranks'.
  bool estimate_chunks() {
    const std::int64_t chunk = p_.chunk_length;
    const PositionMap all = PositionMap::contiguous(0, in_.seq_len);
    estimate_.assign(owner_.size(), Measures{});
    Measures chunk_total;
    for (std::size_t c = 0; c < owner_.size(); ++c) {
      const PositionMap q = PositionMap::contiguous(std::int64_t(c) * chunk, chunk);
      estimate_[c].pairs = in_.chunk_pairs[c];
      estimate_[c].forward = block(q, all, 0);
      estimate_[c].backward = block(q, all, 1);
      chunk_total.forward += estimate_[c].forward;
      chunk_total.backward += estimate_[c].backward;
      if (counted_ > in_.operation_budget) return false;
    }
    const Measures mean = means(loads_);
    const double f = chunk_total.forward > 0 ? mean.forward * ranks_ / chunk_total.forward : 0;
    const double b = chunk_total.backward > 0 ? mean.backward * ranks_ / chunk_total.backward : 0;
    for (Measures& m : estimate_) {
      m.forward *= f;
      m.backward *= b;
    }
    return true;
  }

  void shares(double& pairs, double& forward, double& backward) const {
    const Measures mean = means(loads_);
    pairs = forward = backward = 0;
    for (const Measures& m : loads_) {
      pairs = std::max(pairs, m.pairs / mean.pairs);
      forward = std::max(forward, m.forward / mean.forward);
      backward = std::max(backward, m.backward / mean.backward);
    }
  }

  int busiest_rank() const {
    const Measures mean = means(loads_);
    int busiest = 0;
    for (int r = 1; r < ranks_; ++r)
      if (load(loads_[std::size_t(r)], mean) > load(loads_[std::size_t(busiest)], mean)) busiest = r;
    return busiest;
  }

  /// The busiest rank's swaps, by the estimate of the two ranks' loads after them, the most
  /// promising first (ties: chunk order).
  std::vector<std::pair<std::int64_t, std::int64_t>> candidates(int a) const {
    struct Scored {
      double estimate;
      std::int64_t x, y;
    };
    std::vector<Scored> all;
    const Measures mean = means(loads_);
    const Measures& la = loads_[std::size_t(a)];
    for (const std::int64_t x : p_.chunks[std::size_t(a)])
      for (std::size_t y = 0; y < owner_.size(); ++y) {
        const int b = owner_[y];
        if (b == a) continue;
        const Measures &ex = estimate_[std::size_t(x)], &ey = estimate_[y], &lb = loads_[std::size_t(b)];
        const Measures new_a{la.pairs - ex.pairs + ey.pairs, la.forward - ex.forward + ey.forward,
                             la.backward - ex.backward + ey.backward};
        const Measures new_b{lb.pairs - ey.pairs + ex.pairs, lb.forward - ey.forward + ex.forward,
                             lb.backward - ey.backward + ex.backward};
        all.push_back({std::max(load(new_a, mean), load(new_b, mean)), x, std::int64_t(y)});
      }
    std::sort(all.begin(), all.end(), [](const Scored& l, const Scored& r) {
      if (l.estimate != r.estimate) return l.estimate < r.estimate;
      return l.x != r.x ? l.x < r.x : l.y < r.y;
    });
    std::vector<std::pair<std::int64_t, std::int64_t>> out;
    for (const Scored& c : all) out.emplace_back(c.x, c.y);
    return out;
  }

  static std::vector<std::int64_t> exchanged(std::vector<std::int64_t> chunks, std::int64_t out, std::int64_t in) {
    *std::find(chunks.begin(), chunks.end(), out) = in;
    std::sort(chunks.begin(), chunks.end());
    return chunks;
  }

  Swap count_swap(std::int64_t x, std::int64_t y) {
    Swap s;
    s.x = x, s.y = y;
    s.a = owner_[std::size_t(x)], s.b = owner_[std::size_t(y)];
    s.chunks_a = exchanged(p_.chunks[std::size_t(s.a)], x, y);
    s.chunks_b = exchanged(p_.chunks[std::size_t(s.b)], y, x);
    s.map_a = layout::chunk_positions(s.chunks_a, p_.chunk_length);
    s.map_b = layout::chunk_positions(s.chunks_b, p_.chunk_length);
    auto map = [&](int r) -> const PositionMap& {
      return r == s.a ? s.map_a : r == s.b ? s.map_b : maps_[std::size_t(r)];
    };
    for (int pass = 0; pass < 2; ++pass)
      for (std::vector<double>* v : {&s.row_a[pass], &s.row_b[pass], &s.col_a[pass], &s.col_b[pass]})
        v->assign(std::size_t(ranks_), 0.0);
    // Rank a's rows first: a swap that does not lower the busiest rank's own load is no
    // progress, whatever it does to the others, and needs no more counting.
    for (int pass = 0; pass < 2; ++pass)
      for (int r = 0; r < ranks_; ++r) s.row_a[pass][std::size_t(r)] = block(s.map_a, map(r), pass);
    const Measures today = means(loads_);
    Measures new_a = loads_[std::size_t(s.a)];
    new_a.forward = std::accumulate(s.row_a[0].begin(), s.row_a[0].end(), 0.0);
    new_a.backward = std::accumulate(s.row_a[1].begin(), s.row_a[1].end(), 0.0);
    new_a.pairs += in_.chunk_pairs[std::size_t(y)] - in_.chunk_pairs[std::size_t(x)];
    if (load(new_a, today) >= load(loads_[std::size_t(s.a)], today)) return s;
    s.counted = true;
    for (int pass = 0; pass < 2; ++pass)
      for (int r = 0; r < ranks_; ++r) {
        s.row_b[pass][std::size_t(r)] = block(s.map_b, map(r), pass);
        if (r == s.a || r == s.b) continue;
        s.col_a[pass][std::size_t(r)] = block(maps_[std::size_t(r)], s.map_a, pass);
        s.col_b[pass][std::size_t(r)] = block(maps_[std::size_t(r)], s.map_b, pass);
      }
    s.loads = loads_;
    for (int r = 0; r < ranks_; ++r) {
      Measures& m = s.loads[std::size_t(r)];
      const std::size_t i = std::size_t(r);
      if (r == s.a || r == s.b) {
        const std::vector<double>* row = r == s.a ? s.row_a : s.row_b;
        m.forward = std::accumulate(row[0].begin(), row[0].end(), 0.0);
        m.backward = std::accumulate(row[1].begin(), row[1].end(), 0.0);
        const double out = in_.chunk_pairs[std::size_t(r == s.a ? x : y)],
                     in = in_.chunk_pairs[std::size_t(r == s.a ? y : x)];
        m.pairs += in - out;
        continue;
      }
      m.forward += s.col_a[0][i] + s.col_b[0][i] - at(0, r, s.a) - at(0, r, s.b);
      m.backward += s.col_a[1][i] + s.col_b[1][i] - at(1, r, s.a) - at(1, r, s.b);
    }
    return s;
  }

  void apply(const Swap& s) {
    p_.chunks[std::size_t(s.a)] = s.chunks_a;
    p_.chunks[std::size_t(s.b)] = s.chunks_b;
    owner_[std::size_t(s.x)] = s.b;
    owner_[std::size_t(s.y)] = s.a;
    maps_[std::size_t(s.a)] = s.map_a;
    maps_[std::size_t(s.b)] = s.map_b;
    for (int pass = 0; pass < 2; ++pass)
      for (int r = 0; r < ranks_; ++r) {
        at(pass, s.a, r) = s.row_a[pass][std::size_t(r)];
        at(pass, s.b, r) = s.row_b[pass][std::size_t(r)];
        if (r == s.a || r == s.b) continue;
        at(pass, r, s.a) = s.col_a[pass][std::size_t(r)];
        at(pass, r, s.b) = s.col_b[pass][std::size_t(r)];
      }
    loads_ = s.loads;
  }

  const RefinementInputs& in_;
  layout::ChunkPlacement p_;
  int ranks_;
  std::vector<int> owner_;  // chunk -> rank
  std::vector<PositionMap> maps_;
  std::vector<double> blocks_[2];  // per pass, [q rank][k rank] computed scores
  std::vector<Measures> loads_, estimate_;
  Measures start_means_;
  double counted_ = 0, start_operations_ = 0;
  bool searched_ = false;
};

}  // namespace

layout::ChunkPlacement refine_placement(layout::ChunkPlacement start, const RefinementInputs& inputs,
                                        RefinementReport* report) {
  const std::int64_t chunks = std::int64_t(inputs.chunk_pairs.size());
  const int ranks = int(start.chunks.size());
  require(ranks >= 1 && chunks % ranks == 0 && start.chunk_length * chunks == inputs.seq_len,
          "internal: a refinement's placement and chunk work disagree");
  for (const WeightedRule& r : inputs.rules) require(r.weight >= 0, "internal: a rule's weight is ", r.weight);
  RefinementReport unused, first;
  RefinementReport& out = report != nullptr ? *report : unused;
  Refiner refiner(std::move(start), inputs);
  layout::ChunkPlacement refined = refiner.run(first);
  out = first;
  // Where the swaps stop short of even (the pairs' bound, or a start they cannot leave), a
  // second start, from every chunk's estimated measures at once, refined with what is left of
  // the budget; kept where its busiest share is lower and its busiest rank has no more work.
  if (!refiner.searched() || first.load_after <= kSecondStartAbove || first.out_of_budget) return refined;
  layout::ChunkMeasures measures(3);
  for (const Measures& m : refiner.estimates()) {
    measures[0].push_back(m.pairs);
    measures[1].push_back(m.forward);
    measures[2].push_back(m.backward);
  }
  RefinementInputs rest = inputs;
  rest.operation_budget = inputs.operation_budget - first.operations;
  RefinementReport second;
  Refiner again(layout::place_chunks_by_measures(measures, inputs.seq_len, ranks), rest);
  layout::ChunkPlacement other = again.run(second);
  out.swaps += second.swaps;
  out.tried += second.tried;
  out.operations += second.operations;
  out.out_of_budget = second.out_of_budget;
  auto busiest = [](const std::vector<Measures>& loads, double Measures::*m) {
    double most = 0;
    for (const Measures& l : loads) most = std::max(most, l.*m);
    return most;
  };
  if (!again.searched() || second.load_after >= first.load_after ||
      busiest(again.loads(), &Measures::forward) > busiest(refiner.loads(), &Measures::forward) ||
      busiest(again.loads(), &Measures::backward) > busiest(refiner.loads(), &Measures::backward))
    return refined;
  out.second_start = true;
  out.load_after = second.load_after;
  out.pairs_after = second.pairs_after;
  out.forward_after = second.forward_after;
  out.backward_after = second.backward_after;
  return other;
}

}  // namespace engine
}  // namespace rfa
