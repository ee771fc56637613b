// SPDX-License-Identifier: BSD-3-Clause
// The needed-only exchange's plan (engine/needed_kv_plan.hpp).
#include "engine/needed_kv_plan.hpp"

#include <algorithm>
#include <numeric>
#include <utility>

#include "engine/rank_positions.hpp"
#include "kernels/tile_visibility.hpp"

namespace rfa {
namespace engine {
namespace {

/// Rows bounded one by one in seen_keys() before groups of rows are bounded together.
constexpr std::int64_t kExactRowBudget = std::int64_t(1) << 22;

/// Sorts `spans` and joins those that overlap or touch.
void join(std::vector<KeySpan>& spans) {
  std::sort(spans.begin(), spans.end(), [](const KeySpan& a, const KeySpan& b) { return a.first < b.first; });
  std::size_t kept = 0;
  for (const KeySpan& s : spans) {
    if (kept > 0 && s.first <= spans[kept - 1].last + 1) {
      spans[kept - 1].last = std::max(spans[kept - 1].last, s.last);
    } else {
      spans[kept++] = s;
    }
  }
  spans.resize(kept);
}

/// Fills the smallest gaps between `runs` while the rows they add stay within a twentieth of
/// `seen` rows: fewer, longer runs for a scattered set, bytes within 1.05x of what is seen.
void fill_small_gaps(std::vector<RowRun>& runs, std::int64_t seen) {
  if (runs.size() < 2) return;
  std::vector<std::size_t> order(runs.size() - 1);
  std::iota(order.begin(), order.end(), std::size_t(0));
  auto gap = [&](std::size_t i) { return runs[i + 1].begin - runs[i].end; };
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return gap(a) < gap(b); });
  std::vector<char> filled(runs.size() - 1, 0);
  std::int64_t budget = seen / 20;
  for (std::size_t i : order) {
    if (gap(i) > budget) break;
    budget -= gap(i);
    filled[i] = 1;
  }
  std::size_t kept = 0;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (i > 0 && filled[i - 1])
      runs[kept - 1].end = runs[i].end;
    else
      runs[kept++] = runs[i];
  }
  runs.resize(kept);
}

/// The local rows of one segment (`base`: its first row's local index) whose positions lie in
/// `seen`, appended to `runs`.
void rows_of_segment(const Segment& seg, std::int64_t base, const std::vector<KeySpan>& seen,
                     std::vector<RowRun>& runs) {
  if (seg.length <= 0) return;
  const std::int64_t last = seg.start + (seg.length - 1) * seg.stride;
  auto it = std::lower_bound(seen.begin(), seen.end(), seg.start,
                             [](const KeySpan& s, std::int64_t position) { return s.last < position; });
  for (; it != seen.end() && it->first <= last; ++it) {
    // Rows i with start + i * stride in [first, last]: i from ceil((first - start) / stride).
    const std::int64_t from = std::max<std::int64_t>(0, (it->first - seg.start + seg.stride - 1) / seg.stride);
    const std::int64_t to = std::min(seg.length - 1, (it->last - seg.start) / seg.stride);
    if (it->last < seg.start || from > to) continue;
    const RowRun run{base + from, base + to + 1};
    if (!runs.empty() && runs.back().end == run.begin)
      runs.back().end = run.end;
    else
      runs.push_back(run);
  }
}

/// Appends the global positions of the owner's local rows `run` (owner map `owner`) to `piece`,
/// as segments joined where they continue one another; false, with nothing appended, if that
/// would take the piece past PositionMap::kMaxSegments.
bool append_run(const PositionMap& owner, const RowRun& run, NeededPiece& piece) {
  PositionMap grown = piece.positions;
  std::int64_t base = 0;
  for (int s = 0; s < owner.count; ++s) {
    const Segment& seg = owner.seg[s];
    const std::int64_t a = std::max(run.begin, base), b = std::min(run.end, base + seg.length);
    if (a < b) {
      const Segment part{seg.start + (a - base) * seg.stride, seg.stride, b - a};
      Segment* prev = grown.count > 0 ? &grown.seg[grown.count - 1] : nullptr;
      if (prev && prev->stride == part.stride && prev->start + prev->length * prev->stride == part.start) {
        prev->length += part.length;
      } else {
        if (grown.count == PositionMap::kMaxSegments) return false;
        grown.seg[grown.count++] = part;
      }
    }
    base += seg.length;
  }
  piece.positions = grown;
  piece.runs.push_back(run);
  piece.rows += run.end - run.begin;
  return true;
}

}  // namespace

std::vector<KeySpan> seen_keys(const AttentionConfig& c, int ranks, int receiver) {
  const PositionMap mine = rank_positions(c, ranks, receiver);
  const std::int64_t entries = mask_rule_entries(c), S = c.seq_total;
  // Rows bounded together: 1 while the budget holds.
  const std::int64_t work = mine.length() * entries;
  const std::int64_t group = std::max<std::int64_t>(1, (work + kExactRowBudget - 1) / kExactRowBudget);
  std::vector<KeySpan> spans;
  std::vector<std::pair<std::int64_t, std::int64_t>> row_keys;
  for (std::int64_t e = 0; e < entries; ++e) {
    const kernels::MaskRule rule = mask_rule(c, e);
    for (int s = 0; s < mine.count; ++s) {
      const Segment& seg = mine.seg[s];
      if (seg.length <= 0) continue;
      if (!rule.ranges.on && (seg.stride == 1 || seg.length == 1)) {
        std::int64_t lo = 0, hi = 0;
        rule.key_bounds(seg.start, seg.start + seg.length - 1, S, lo, hi);
        if (lo <= hi) spans.push_back({lo, hi});
        continue;
      }
      for (std::int64_t i = 0; i < seg.length; i += group) {
        const std::int64_t q_lo = seg.start + i * seg.stride;
        const std::int64_t q_hi = seg.start + (std::min(i + group, seg.length) - 1) * seg.stride;
        std::int64_t lo = 0, hi = 0;
        rule.key_bounds(q_lo, q_hi, S, lo, hi);
        if (lo > hi) continue;
        if (group == 1 && rule.ranges.on) {
          visible_key_intervals(rule.ranges, q_lo, lo, hi, row_keys);
          for (const auto& k : row_keys) spans.push_back({k.first, k.second});
        } else {
          spans.push_back({lo, hi});
        }
      }
      join(spans);  // keeps the list as short as the answer between segments
    }
  }
  join(spans);
  return spans;
}

NeededTransfer needed_transfer(const AttentionConfig& c, int ranks, const std::vector<KeySpan>& seen, int owner) {
  const PositionMap theirs = rank_positions(c, ranks, owner);
  NeededTransfer t;
  std::int64_t base = 0;
  for (int s = 0; s < theirs.count; ++s) {
    rows_of_segment(theirs.seg[s], base, seen, t.runs);
    base += theirs.seg[s].length;
  }
  for (const RowRun& r : t.runs) t.seen_rows += r.end - r.begin;
  fill_small_gaps(t.runs, t.seen_rows);
  for (const RowRun& r : t.runs) {
    t.rows += r.end - r.begin;
    if (t.pieces.empty() || !append_run(theirs, r, t.pieces.back())) {
      t.pieces.emplace_back();
      t.pieces.back().first_row = t.rows - (r.end - r.begin);
      append_run(theirs, r, t.pieces.back());  // a run spans at most the owner's segments: it fits
    }
  }
  return t;
}

PackedRows::PackedRows(const NeededTransfer& t, std::int64_t batch) {
  for (const NeededPiece& piece : t.pieces) {
    std::int64_t i = batch * piece.first_row;  // the piece's first row in the buffer
    for (const RowRun& run : piece.runs)
      for (std::int64_t row = run.begin; row < run.end; ++row, ++i) {
        local.push_back(row);
        packed.push_back(i);
        piece_rows.push_back(piece.rows);
      }
  }
}

std::vector<NeededRound> needed_rounds(const AttentionConfig& c, int ranks, int me) {
  if (ranks == 1) return {};  // one rank holds every key its queries see
  std::vector<NeededRound> rounds(static_cast<std::size_t>(ranks));
  std::vector<char> needed(std::size_t(ranks), 0);
  for (int r = 0; r < ranks; ++r) {
    const std::vector<KeySpan> seen = seen_keys(c, ranks, r);
    for (int s = 1; s < ranks; ++s) {
      const int owner = (r - s + ranks) % ranks;
      // Rows this rank needs, rows it sends, or only whether round s has work for someone.
      if (r != me && owner != me && needed[std::size_t(s)]) continue;
      NeededTransfer t = needed_transfer(c, ranks, seen, owner);
      if (t.seen_rows > 0) needed[std::size_t(s)] = 1;
      if (r == me)
        rounds[std::size_t(s)].receive = std::move(t);
      else if (owner == me)
        rounds[std::size_t(s)].send = std::move(t);
    }
  }
  std::vector<NeededRound> kept;
  for (int s = 1; s < ranks; ++s) {
    if (!needed[std::size_t(s)]) continue;
    NeededRound& round = rounds[std::size_t(s)];
    round.distance = s;
    round.from = (me - s + ranks) % ranks;
    round.to = (me + s) % ranks;
    kept.push_back(std::move(round));
  }
  return kept;
}

}  // namespace engine
}  // namespace rfa
