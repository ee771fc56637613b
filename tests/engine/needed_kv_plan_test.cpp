// SPDX-License-Identifier: BSD-3-Clause
// The needed-only exchange's plan (engine/needed_kv_plan.hpp) against a brute force over every
// (query, key) pair: the keys each rank sees exactly, each owner's rows a superset of them
// within 1.1x, pieces whose positions are the rows' own, and rounds at exactly the distances
// where some rank sees another's keys, each round's sends the receivers' receives. Every
// layout, P = 1..8, causal and full masks, windows beside chunk edges, documents (one list and
// per sequence), masks as ranges (grid neighbourhoods, random lists); and a sequence long enough
// that rows are bounded in groups, where the seen keys must still cover every row's.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/mask_range_builders.hpp"
#include "core/mask_ranges.hpp"
#include "engine/attention_config.hpp"
#include "engine/needed_kv_plan.hpp"
#include "engine/rank_positions.hpp"
#include "positions_and_pairs.hpp"

namespace rfa::engine {
namespace {

struct Mask {
  Mask(std::string n, rfa_mask_t m, std::int64_t w = 0, std::vector<std::int64_t> d = {},
       std::vector<std::int64_t> o = {}, std::shared_ptr<const MaskRanges> r = nullptr)
      : name(std::move(n)), mask(m), window(w), docs(std::move(d)), offsets(std::move(o)), ranges(std::move(r)) {}
  std::string name;
  rfa_mask_t mask;
  std::int64_t window;
  std::vector<std::int64_t> docs, offsets;
  std::shared_ptr<const MaskRanges> ranges;
};

/// The masks of the sweep for a sequence of S tokens cut into chunks of `chunk` (the zigzag
/// layout's half-blocks).
std::vector<Mask> masks(std::int64_t S, std::int64_t chunk, std::uint64_t seed) {
  std::vector<Mask> all;
  all.push_back({"causal", RFA_MASK_CAUSAL});
  all.push_back({"full", RFA_MASK_NONE});
  for (std::int64_t d : {-1, 0, 1}) {
    all.push_back({"causal window " + std::to_string(chunk + d), RFA_MASK_CAUSAL, chunk + d});
    all.push_back({"full window " + std::to_string(2 * chunk + d), RFA_MASK_NONE, 2 * chunk + d});
  }
  all.push_back({"causal documents", RFA_MASK_CAUSAL, 0, {0, chunk - 1, chunk + 1, 3 * chunk, S - chunk, S}});
  all.push_back({"full documents", RFA_MASK_NONE, 0, {0, 1, 2 * chunk, 2 * chunk + 1, S}});
  // Two sequences of the batch with their own documents (the second: one document).
  all.push_back({"per-sequence documents", RFA_MASK_CAUSAL, 0, {0, chunk + 1, S, 0, S}, {0, 3, 5}});
  auto ranges = [&](const std::vector<rfa_mask_range_t>& list) {
    return std::make_shared<const MaskRanges>(list.data(), std::int64_t(list.size()), S, "ranges");
  };
  // A 2-D neighbourhood: S = nx * ny with nx = chunk.
  all.push_back({"grid r=1", RFA_MASK_RANGES, 0, {}, {}, ranges(grid_neighbourhood_ranges(chunk, S / chunk, 1, 1))});
  all.push_back({"grid r=2 window",
                 RFA_MASK_RANGES,
                 chunk + 3,
                 {},
                 {},
                 ranges(grid_neighbourhood_ranges(chunk, S / chunk, 1, 2))});
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::int64_t> at(0, S - 1), side(1, S / 6), kind(0, 2);
  std::vector<rfa_mask_range_t> list;
  for (int n = 0; n < 5; ++n) {
    const std::int64_t q = at(rng), k = at(rng);
    const rfa_range_kind_t kinds[] = {RFA_RANGE_FULL, RFA_RANGE_CAUSAL, RFA_RANGE_ANTICAUSAL};
    list.push_back({q, std::min(S, q + side(rng)), k, std::min(S, k + side(rng)), 0, 0, kinds[kind(rng)]});
  }
  list.push_back({S / 2, S / 2 + 1, 0, 1, 0, 0, RFA_RANGE_FULL});  // one query sees one key
  all.push_back({"random ranges", RFA_MASK_RANGES, 0, {}, {}, ranges(list)});
  all.push_back({"empty ranges", RFA_MASK_RANGES, 0, {}, {}, ranges({})});
  return all;
}

AttentionConfig config_of(const Mask& m, rfa_layout_t layout, std::int64_t S) {
  AttentionConfig c;
  c.layout = layout;
  c.mask = m.mask;
  c.dtype = RFA_DTYPE_FLOAT32;
  c.batch = m.offsets.empty() ? 1 : std::int64_t(m.offsets.size()) - 1;
  c.seq_total = S;
  c.heads = c.kv_heads = 1;
  c.window = m.window;
  c.doc_bounds = m.docs;
  c.doc_offsets = m.offsets;
  c.ranges = m.ranges;
  return c;
}

TEST(NeededKvPlan, MatchesEveryPairOnEveryLayout) {
  for (int P : {1, 2, 3, 4, 5, 8}) {
    const std::int64_t S = 120 * P, chunk = S / (2 * P);
    for (const Mask& m : masks(S, chunk, std::uint64_t(P))) {
      for (rfa_layout_t layout : {RFA_LAYOUT_CONTIGUOUS, RFA_LAYOUT_ZIGZAG, RFA_LAYOUT_STRIPE, RFA_LAYOUT_BALANCED}) {
        SCOPED_TRACE(::testing::Message() << "P " << P << " " << m.name << " layout " << int(layout));
        const AttentionConfig c = config_of(m, layout, S);
        std::vector<std::vector<std::int64_t>> rows;
        std::vector<int> owner(std::size_t(S), -1);
        std::vector<std::int64_t> local_row(std::size_t(S), -1);
        for (int r = 0; r < P; ++r) {
          rows.push_back(rows_of(rank_positions(c, P, r)));
          for (std::size_t i = 0; i < rows.back().size(); ++i) {
            owner[std::size_t(rows.back()[i])] = r;
            local_row[std::size_t(rows.back()[i])] = std::int64_t(i);
          }
        }
        std::vector<char> distance_needed(std::size_t(P), 0);
        std::vector<std::vector<NeededRound>> rounds;
        for (int r = 0; r < P; ++r) rounds.push_back(needed_rounds(c, P, r));
        for (int r = 0; r < P; ++r) {
          std::vector<char> seen(std::size_t(S), 0);
          for (std::int64_t e = 0; e < mask_rule_entries(c); ++e) {
            const kernels::MaskRule rule = mask_rule(c, e);
            for (std::int64_t q : rows[std::size_t(r)])
              for (std::int64_t k = 0; k < S; ++k)
                if (!seen[std::size_t(k)] && sees(rule, q, k)) seen[std::size_t(k)] = 1;
          }
          // Exactly the keys seen, as spans that neither overlap nor touch.
          const std::vector<KeySpan> spans = seen_keys(c, P, r);
          std::vector<char> spanned(std::size_t(S), 0);
          for (std::size_t i = 0; i < spans.size(); ++i) {
            ASSERT_LE(spans[i].first, spans[i].last);
            if (i > 0) {
              ASSERT_GT(spans[i].first, spans[i - 1].last + 1);
            }
            for (std::int64_t k = spans[i].first; k <= spans[i].last; ++k) spanned[std::size_t(k)] = 1;
          }
          ASSERT_EQ(spanned, seen) << "receiver " << r;
          for (int o = 0; o < P; ++o) {
            if (o == r) continue;
            const NeededTransfer t = needed_transfer(c, P, spans, o);
            std::vector<char> sent(rows[std::size_t(o)].size(), 0);
            std::int64_t sent_rows = 0;
            for (std::size_t i = 0; i < t.runs.size(); ++i) {
              ASSERT_LT(t.runs[i].begin, t.runs[i].end);
              if (i > 0) {
                ASSERT_GT(t.runs[i].begin, t.runs[i - 1].end);  // runs that touch are one
              }
              for (std::int64_t x = t.runs[i].begin; x < t.runs[i].end; ++x) sent[std::size_t(x)] = 1;
              sent_rows += t.runs[i].end - t.runs[i].begin;
            }
            std::int64_t seen_there = 0;
            for (std::int64_t k : rows[std::size_t(o)])
              if (seen[std::size_t(k)]) {
                ++seen_there;
                EXPECT_TRUE(sent[std::size_t(local_row[std::size_t(k)])]) << "key " << k << " of rank " << o;
              }
            EXPECT_EQ(t.seen_rows, seen_there);
            EXPECT_EQ(t.rows, sent_rows);
            EXPECT_LE(double(t.rows), 1.1 * double(seen_there)) << "owner " << o;
            if (seen_there > 0) distance_needed[std::size_t((r - o + P) % P)] = 1;
            // The pieces: the runs in order, each piece's positions those of its rows.
            std::vector<RowRun> joined;
            std::int64_t piece_rows = 0;
            for (const NeededPiece& piece : t.pieces) {
              ASSERT_GE(piece.positions.count, 1);
              ASSERT_LE(piece.positions.count, PositionMap::kMaxSegments);
              ASSERT_EQ(piece.positions.length(), piece.rows);
              std::int64_t i = 0;
              for (const RowRun& run : piece.runs) {
                joined.push_back(run);
                for (std::int64_t x = run.begin; x < run.end; ++x, ++i)
                  ASSERT_EQ(piece.positions(i), rows[std::size_t(o)][std::size_t(x)]);
              }
              piece_rows += piece.rows;
            }
            EXPECT_EQ(piece_rows, t.rows);
            ASSERT_EQ(joined.size(), t.runs.size());
            for (std::size_t i = 0; i < joined.size(); ++i) {
              EXPECT_EQ(joined[i].begin, t.runs[i].begin);
              EXPECT_EQ(joined[i].end, t.runs[i].end);
            }
            // This pair's round, as both of its ranks hold it.
            const int s = (r - o + P) % P;
            auto at = [&](int rank) {
              const auto& list = rounds[std::size_t(rank)];
              return std::find_if(list.begin(), list.end(), [&](const NeededRound& x) { return x.distance == s; });
            };
            if (seen_there == 0) continue;
            const auto in = at(r), out = at(o);
            ASSERT_NE(in, rounds[std::size_t(r)].end()) << "distance " << s;
            ASSERT_NE(out, rounds[std::size_t(o)].end()) << "distance " << s;
            EXPECT_EQ(in->from, o);
            EXPECT_EQ(out->to, r);
            EXPECT_EQ(in->receive.rows, t.rows);
            EXPECT_EQ(out->send.rows, t.rows);
            ASSERT_EQ(out->send.runs.size(), t.runs.size());
            for (std::size_t i = 0; i < t.runs.size(); ++i) EXPECT_EQ(out->send.runs[i].begin, t.runs[i].begin);
          }
        }
        // Rounds at exactly the distances some rank needs, the same on every rank.
        std::vector<int> want;
        for (int s = 1; s < P; ++s)
          if (distance_needed[std::size_t(s)]) want.push_back(s);
        for (int r = 0; r < P; ++r) {
          std::vector<int> got;
          for (const NeededRound& x : rounds[std::size_t(r)]) got.push_back(x.distance);
          EXPECT_EQ(got, want) << "rank " << r;
        }
      }
    }
  }
}

// A contiguous layout without a mask, S rows: needed_transfer() then sends what it is given.
AttentionConfig unmasked_contiguous(std::int64_t S) {
  AttentionConfig c;
  c.layout = RFA_LAYOUT_CONTIGUOUS;
  c.mask = RFA_MASK_NONE;
  c.dtype = RFA_DTYPE_FLOAT32;
  c.seq_total = S;
  return c;
}

// Rows of a scattered set are sent in fewer runs, within 1.05x of what is seen: a stripe of
// single keys three rows apart, next to a run.
TEST(NeededKvPlan, FillsSmallGapsWithinAFifthOfATenth) {
  const AttentionConfig c = unmasked_contiguous(2000);
  std::vector<KeySpan> seen = {{0, 399}};
  for (std::int64_t k = 1000; k < 1100; k += 3) seen.push_back({k, k});
  const NeededTransfer t = needed_transfer(c, 2, seen, 0);
  EXPECT_EQ(t.seen_rows, 400);
  EXPECT_LE(t.rows, 420);
  EXPECT_LT(t.runs.size(), 35u);  // 35 runs without filling
  const NeededTransfer far = needed_transfer(c, 2, seen, 1);
  EXPECT_EQ(far.seen_rows, 34);
  EXPECT_EQ(far.rows, 34);  // a twentieth of 34 fills no gap of 2
  EXPECT_EQ(far.runs.size(), 34u);
  EXPECT_EQ(far.pieces.size(), 5u);  // 8 segments a piece
}

// A piece takes at most eight segments: eight runs far apart make one piece, nine make two,
// the second starting at the ninth row sent.
TEST(NeededKvPlan, PiecesSplitAtTheEighthSegment) {
  const AttentionConfig c = unmasked_contiguous(200);
  for (int runs : {7, 8, 9}) {
    SCOPED_TRACE(::testing::Message() << runs << " runs");
    std::vector<KeySpan> seen;
    for (int n = 0; n < runs; ++n) seen.push_back({10 * n, 10 * n});  // gaps of 9: none filled
    const NeededTransfer t = needed_transfer(c, 2, seen, 0);
    ASSERT_EQ(t.runs.size(), std::size_t(runs));
    ASSERT_EQ(t.pieces.size(), runs <= 8 ? 1u : 2u);
    EXPECT_EQ(t.pieces[0].positions.count, std::min(runs, 8));
    EXPECT_EQ(t.pieces[0].first_row, 0);
    if (runs == 9) {
      EXPECT_EQ(t.pieces[1].first_row, 8);
      EXPECT_EQ(t.pieces[1].rows, 1);
      EXPECT_EQ(t.pieces[1].positions(0), 80);
    }
    const PackedRows packed(t, 3);  // batch 3: the second piece's rows start after 3 x 8
    ASSERT_EQ(packed.count(), runs);
    EXPECT_EQ(packed.packed.back(), runs == 9 ? 24 : runs - 1);
    EXPECT_EQ(packed.local.back(), 10 * (runs - 1));
  }
}

// Past the row budget (2^22 rows times the rules), groups of rows are bounded together: the
// spans must still hold every key each row sees (checked on sampled rows) and stay local.
TEST(NeededKvPlan, GroupedRowsStillCoverEveryRowsKeys) {
  const std::int64_t nx = 4096, ny = 4096, S = nx * ny;  // 2^24 points
  const std::vector<rfa_mask_range_t> list = grid_neighbourhood_ranges(nx, ny, 1, 1);
  AttentionConfig c;
  c.layout = RFA_LAYOUT_CONTIGUOUS;
  c.mask = RFA_MASK_RANGES;
  c.dtype = RFA_DTYPE_FLOAT32;
  c.seq_total = S;
  c.ranges = std::make_shared<const MaskRanges>(list.data(), std::int64_t(list.size()), S, "grid");
  // Four ranks hold 2^22 rows each: exact, rank 1 sees one grid row of each neighbour.
  const std::vector<KeySpan> exact = seen_keys(c, 4, 1);
  ASSERT_EQ(exact.size(), 1u);
  EXPECT_EQ(exact.front().first, S / 4 - nx);
  EXPECT_EQ(exact.front().last, S / 2 + nx - 1);
  EXPECT_EQ(needed_transfer(c, 4, exact, 0).rows, nx);
  EXPECT_EQ(needed_transfer(c, 4, exact, 3).rows, 0);
  // Two ranks hold 2^23 rows each: bounded in pairs of rows, still one grid row of rank 0.
  const std::vector<KeySpan> spans = seen_keys(c, 2, 1);
  ASSERT_FALSE(spans.empty());
  EXPECT_GE(spans.front().first, S / 2 - 2 * nx);
  EXPECT_LE(needed_transfer(c, 2, spans, 0).rows, 2 * nx);
  const kernels::MaskRule rule = mask_rule(c, 0);
  std::vector<std::pair<std::int64_t, std::int64_t>> row;
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<std::int64_t> at(S / 2, S - 1);
  for (int n = 0; n < 2000; ++n) {
    const std::int64_t q = n == 0 ? S / 2 : at(rng);  // the first row sees rank 0's
    std::int64_t lo = 0, hi = 0;
    rule.key_bounds(q, q, S, lo, hi);
    visible_key_intervals(rule.ranges, q, lo, hi, row);
    for (const auto& keys : row) {
      auto it = std::lower_bound(spans.begin(), spans.end(), keys.first,
                                 [](const KeySpan& s, std::int64_t k) { return s.last < k; });
      ASSERT_TRUE(it != spans.end() && it->first <= keys.first && keys.second <= it->last) << "query " << q;
    }
  }
}

}  // namespace
}  // namespace rfa::engine
