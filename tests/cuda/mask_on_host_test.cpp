// SPDX-License-Identifier: BSD-3-Clause
// The CUDA kernels' mask (kernels_cuda/src/attention_mask.cuh), compiled for the host
// (device_code_on_host.hpp), against every (query, key) pair of small masks: a tile it skips
// has no visible pair inside the sequences, a tile it calls full has every pair visible and
// inside them, its per-element test (visible_pair over each side's masked_index, as every
// kernel calls it in a partial tile; the Hopper kernels' form without ranges too) agrees with
// the documented rule pair by pair, and a tile inside the sequences is classified exactly as
// the host kernels' classify_tile (src/kernels/tile_visibility.hpp), whose rule the device code
// is documented to share.
// Position maps as the kernels take them (one segment or two: contiguous, strided, zigzag's
// two chunks), tiles reaching up to two rows past a sequence's end, causal or not, windows of
// 0 to 9, documents (an empty one among them), per-sequence documents (DeviceMask::for_entry)
// and random range lists whose bounds sit on the maps' edges. The bounds a walk over key tiles
// or query tiles finds once per tile from the causal mask, the window, the documents and the
// ranges (key_tile_walk, query_tile_walk) are checked against every pair too.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/mask_ranges.hpp"
#include "core/positions.hpp"
#include "documented_mask.hpp"
#include "kernels/tile_visibility.hpp"

// The device header after the stand-ins for CUDA's qualifiers.
#include "device_code_on_host.hpp"

#include "attention_mask.cuh"

namespace rfa_cuda {
namespace detail {
namespace {

using rfa::MaskRangeIndex;
using rfa::MaskRanges;
using rfa::PositionMap;
using rfa::Segment;
using rfa::kernels::MaskRule;
using rfa::kernels::TileVisibility;

constexpr std::int64_t S = 20;  // every map's positions lie in [0, S)

using rfa_test::small_position_maps;

/// The map as flash_api.cu's to_device_positions hands it to the kernels (the same factories).
DevicePositions device_positions(const PositionMap& m) {
  const Segment& a = m.seg[0];
  const Segment& b = m.seg[1];
  return m.count == 2 ? DevicePositions::two(a.start, a.stride, a.length, b.start, b.stride)
                      : DevicePositions::one(a.start, a.stride);
}

/// The index's arrays as copy_mask_to_device (src/engine/device_mask_data.cpp) hands them to the
/// kernels: the entries as six int64 each; an index without bands has no arrays at all (NULL), so
/// that a kernel reading one of them fails here too.
DeviceRanges device_ranges(const MaskRangeIndex& x) {
  if (x.band_count == 0) return DeviceRanges{x.on, nullptr, nullptr, nullptr, nullptr, 0};
  return DeviceRanges{
      x.on, x.band_begin, x.band_end, x.band_offset, reinterpret_cast<const std::int64_t*>(x.entries), x.band_count};
}

struct Case {
  std::string name;
  DeviceMask device;
  MaskRule host;
  rfa_test::DocumentedMask truth;  // the rule as documented, without the library's code
};

TileKind expected_kind(TileVisibility v) {
  return v == TileVisibility::hidden ? TileKind::kSkip
         : v == TileVisibility::full ? TileKind::kFull
                                     : TileKind::kPartial;
}

const char* kind_name(TileKind k) { return k == TileKind::kSkip ? "skip" : k == TileKind::kFull ? "full" : "partial"; }

/// Every element and every tile of every pair of maps under the case's mask; returns the tiles
/// checked, and stops at a case's first disagreement (reported).
int check_every_tile(const Case& c) {
  int tiles = 0;
  for (const PositionMap& q : small_position_maps())
    for (const PositionMap& k : small_position_maps()) {
      const DevicePositions dq = device_positions(q), dk = device_positions(k);
      const int seq_q = int(q.length()), seq_k = int(k.length());
      const int rows = seq_q + 2, cols = seq_k + 2;  // rows and columns past the ends see nothing
      std::vector<char> pair(std::size_t(rows * cols), 0);
      for (int i = 0; i < rows; ++i)
        for (int j = 0; j < cols; ++j) {
          const bool want = i < seq_q && j < seq_k && c.truth(q(i), k(j));
          pair[std::size_t(i * cols + j)] = want;
          const MaskedIndex row = masked_index(c.device, dq, i, seq_q), column = masked_index(c.device, dk, j, seq_k);
          if (visible_pair(c.device, row, column) != want) {
            ADD_FAILURE() << c.name << ": visible_pair(row " << i << ", column " << j << ") is " << !want
                          << " (queries from " << q(0) << ", keys from " << k(0) << ")";
            return tiles;
          }
          // The Hopper kernels' form, which leaves out the ranges they refuse.
          if (!c.device.ranges.on && visible_pair<kWithoutRanges>(c.device, row, column) != want) {
            ADD_FAILURE() << c.name << ": visible_pair<kWithoutRanges>(row " << i << ", column " << j << ") is "
                          << !want << " (queries from " << q(0) << ", keys from " << k(0) << ")";
            return tiles;
          }
        }
      for (int r0 = 0; r0 < seq_q; ++r0)
        for (int r1 = r0 + 1; r1 <= rows; ++r1)
          for (int c0 = 0; c0 < seq_k; ++c0)
            for (int c1 = c0 + 1; c1 <= cols; ++c1) {
              bool any = false, all = true;
              for (int i = r0; i < r1; ++i)
                for (int j = c0; j < c1; ++j) {
                  any = any || pair[std::size_t(i * cols + j)];
                  all = all && pair[std::size_t(i * cols + j)];
                }
              const TileKind got = classify_tile(c.device, dq, dk, r0, r1 - r0, seq_q, c0, c1 - c0, seq_k);
              ++tiles;
              auto where = [&] {  // built only for a failure's message
                std::ostringstream w;
                w << c.name << ": rows [" << r0 << ", " << r1 << ") of " << seq_q << " (queries from " << q(0)
                  << "), columns [" << c0 << ", " << c1 << ") of " << seq_k << " (keys from " << k(0) << "): ";
                return w.str();
              };
              if (got == TileKind::kSkip && any) {
                ADD_FAILURE() << where() << "a tile with a visible pair is skipped";
                return tiles;
              }
              if (got == TileKind::kFull && !all) {
                ADD_FAILURE() << where() << "a tile with a hidden pair or a row past the end is full";
                return tiles;
              }
              if (r1 <= seq_q && c1 <= seq_k) {
                const TileKind host = expected_kind(rfa::kernels::classify_tile(c.host, q, r0, r1, k, c0, c1));
                if (got != host) {
                  ADD_FAILURE() << where() << "the device calls it " << kind_name(got) << ", the host "
                                << kind_name(host);
                  return tiles;
                }
              }
            }
    }
  return tiles;
}

/// mask_fragment over every lane of a warp, both sides as rows, at first rows and columns that
/// put a fragment across a sequence's end or wholly past it, against the documented rule at the
/// pair mma m16n8k16's accumulator layout gives each element (g = lane / 4, t = lane % 4: row g +
/// 8 (e / 2), column 8 nb + 2 t + e % 2). Returns the fragments checked; stops at the first
/// disagreement (reported).
int check_fragments(const Case& c) {
  int fragments = 0;
  for (const PositionMap& q : small_position_maps())
    for (const PositionMap& k : small_position_maps()) {
      const DevicePositions dq = device_positions(q), dk = device_positions(k);
      const int seq_q = int(q.length()), seq_k = int(k.length());
      for (bool rows_are_queries : {true, false}) {
        const int row_seq = rows_are_queries ? seq_q : seq_k, col_seq = rows_are_queries ? seq_k : seq_q;
        for (int first_row : {0, row_seq - 16, row_seq - 9, row_seq - 1, row_seq})
          for (int first_col : {0, col_seq - 16, col_seq - 9, col_seq - 1, col_seq}) {
            if (first_row < 0 || first_col < 0) continue;
            for (int lane = 0; lane < 32; ++lane) {
              float scores[2][4];
              for (auto& block : scores)
                for (float& x : block) x = 1.f;
              if (rows_are_queries)
                mask_fragment<FragmentRows::kQueries>(scores, c.device, dq, dk, seq_q, seq_k, first_row, first_col,
                                                      lane);
              else
                mask_fragment<FragmentRows::kKeys>(scores, c.device, dq, dk, seq_q, seq_k, first_row, first_col, lane);
              ++fragments;
              for (int nb = 0; nb < 2; ++nb)
                for (int e = 0; e < 4; ++e) {
                  const int row = first_row + lane / 4 + 8 * (e / 2), col = first_col + 8 * nb + 2 * (lane % 4) + e % 2;
                  const int qi = rows_are_queries ? row : col, ki = rows_are_queries ? col : row;
                  const bool want = qi < seq_q && ki < seq_k && c.truth(q(qi), k(ki));
                  if ((scores[nb][e] == 1.f) != want) {
                    ADD_FAILURE() << c.name << ": mask_fragment with " << (rows_are_queries ? "query" : "key")
                                  << " rows from " << first_row << ", columns from " << first_col << ", lane " << lane
                                  << ", element " << e << " of block " << nb << " (query " << qi << ", key " << ki
                                  << ") is " << (want ? "masked" : "kept") << " (queries from " << q(0)
                                  << ", keys from " << k(0) << ")";
                    return fragments;
                  }
                }
            }
          }
      }
    }
  return fragments;
}

/// The case for a causal flag, a window, documents and ranges (nullptr: none).
Case make_case(bool causal, std::int64_t window, const std::vector<std::int64_t>& docs, const MaskRanges* ranges) {
  Case c;
  c.truth = rfa_test::DocumentedMask{causal, window, &docs, ranges ? &ranges->entries() : nullptr};
  const std::int64_t* bounds = docs.empty() ? nullptr : docs.data();  // the caller's, outliving the case
  const MaskRangeIndex index = ranges ? ranges->index() : MaskRangeIndex{};
  c.host.causal = causal;
  c.host.window = window;
  c.host.doc_bounds = bounds;
  c.host.doc_bound_count = std::int64_t(docs.size());
  c.host.ranges = index;
  c.device = DeviceMask{causal, window, bounds, std::int64_t(docs.size()), device_ranges(index), nullptr};
  std::ostringstream name;
  name << (causal ? "causal" : "full") << ", window " << window << ", documents";
  for (std::int64_t b : docs) name << " " << b;
  if (ranges) name << ", " << ranges->entries().size() << " ranges";
  c.name = name.str();
  return c;
}

const std::vector<std::vector<std::int64_t>> kDocumentSets = {{}, {0, 4, 5, 9, 20}, {0, 3, 3, 11, 20}};

TEST(CudaMaskOnHost, CausalWindowsAndDocumentsAgreeWithEveryPair) {
  int tiles = 0;
  for (bool causal : {false, true})
    for (std::int64_t window = 0; window <= 9; ++window)
      for (const auto& docs : kDocumentSets) tiles += check_every_tile(make_case(causal, window, docs, nullptr));
  EXPECT_GT(tiles, 1000000);
}

TEST(CudaMaskOnHost, EveryLaneMasksItsOwnElementsOfAPartialTile) {
  int fragments = 0;
  for (bool causal : {false, true})
    for (std::int64_t window : {0, 1, 5})
      for (const auto& docs : kDocumentSets) fragments += check_fragments(make_case(causal, window, docs, nullptr));
  std::mt19937_64 rng(29);
  for (int trial = 0; trial < 6; ++trial) {
    const std::vector<rfa_mask_range_t> list = rfa_test::random_mask_ranges(rng, S, 1 + trial, {0, 3, 5, 9, 12, 15});
    const MaskRanges ranges(list.data(), std::int64_t(list.size()), S, "ranges");
    fragments += check_fragments(make_case(trial % 2 == 1, 0, kDocumentSets[std::size_t(trial) % 3], &ranges));
  }
  EXPECT_GT(fragments, 100000);
}

TEST(CudaMaskOnHost, RangesAgreeWithEveryPair) {
  // A list of empty entries (an index without bands: every tile skipped), then random lists.
  rfa_mask_range_t empty{};
  empty.q_begin = empty.q_end = 3, empty.k_begin = 0, empty.k_end = S, empty.kind = RFA_RANGE_FULL;
  std::vector<std::vector<rfa_mask_range_t>> lists = {{empty}};
  std::mt19937_64 rng(13);
  for (int trial = 0; trial < 60; ++trial)
    lists.push_back(rfa_test::random_mask_ranges(rng, S, 1 + trial % 6, {0, 3, 5, 6, 7, 9, 11, 12, 13, 15}));
  int tiles = 0;
  for (std::size_t trial = 0; trial < lists.size(); ++trial) {
    const MaskRanges ranges(lists[trial].data(), std::int64_t(lists[trial].size()), S, "ranges");
    const bool causal = trial % 3 == 1;
    const std::int64_t window = trial % 4 == 2 ? 5 : 0;
    tiles += check_every_tile(make_case(causal, window, kDocumentSets[trial % 3], &ranges));
  }
  EXPECT_GT(tiles, 1000000);
}

/// What a walk's bounds say of the tiles it walks over: those outside [visit_begin, visit_end)
/// have no visible pair, those in [full_begin, full_end) have every pair visible.
struct WalkClaim {
  int visit_begin, visit_end, full_begin, full_end;
};

/// A walk's bounds for a block of rows on the side that stays (`fixed_first`, `fixed_rows`) over
/// tiles of `tile_rows` on the side it walks: key tiles for a tile of queries (key_tile_walk, the
/// forwards'), or query tiles for a tile of keys (query_tile_walk, the backwards').
WalkClaim walk_claim(const Case& c, bool keys_walked, const DevicePositions& dq, const DevicePositions& dk, int seq_q,
                     int seq_k, int fixed_first, int fixed_rows, int tile_rows) {
  if (keys_walked) {
    const KeyWalk w = key_tile_walk(c.device, dq, dk, fixed_first, fixed_rows, seq_q, tile_rows, seq_k);
    return {w.begin_tile, w.end_tile, w.full_begin, w.full_end};
  }
  const QueryWalkBounds w = query_tile_walk(c.device, dq, dk, fixed_first, fixed_rows, seq_k, tile_rows, seq_q);
  return {w.begin_tile, w.end_tile, w.full_begin, w.full_end};
}

/// What the walks of one case came to: how many were checked, and how many tiles they left out
/// that the causal mask and the window alone would have taken (the documents' and ranges' cuts).
struct WalkCounts {
  int walks = 0;
  long cut_by_other_masks = 0;
};

/// Whether a map is one piece of consecutive positions.
bool consecutive(const PositionMap& m) { return m.count == 1 && m.seg[0].stride == 1; }

/// Whether a map's positions increase from row to row (across its pieces too).
bool increasing(const PositionMap& m) {
  for (std::int64_t i = 1; i < m.length(); ++i)
    if (m(i) <= m(i - 1)) return false;
  return true;
}

/// Every walk of one kind for blocks of 1 to 16 rows (up to past the sequence's end) over tiles of
/// 1 to 8 rows, on every pair of maps (and one whose second piece comes before its first): no
/// tile the walk leaves out has a visible pair, every tile it takes as full lies inside the
/// sequences with every pair visible (and classify_tile calls it full); the walks go no further
/// than they must: under the causal mask alone the tile where the causal bound cuts the walk (the
/// forwards' last, the backwards' first) has a visible pair, and under a window alone (no causal
/// mask) so has the tile where the window's bound cuts it (the forwards' first, the backwards'
/// last); under documents alone, on maps whose positions increase, the walk takes exactly the
/// tiles from the first to the last that hold a row some position between the block's least and
/// greatest could see (at most one tile where none could); with no part of the mask that bounds a
/// walk it takes every tile, none known full; under
/// ranges none are known full, and otherwise, where both maps are one piece of consecutive
/// positions, every tile inside the sequences with every pair visible is known full.
/// Stops at a case's first disagreement (reported).
WalkCounts check_walks(const Case& c, bool keys_walked) {
  std::vector<PositionMap> maps = small_position_maps();
  maps.push_back(PositionMap::two(Segment{12, 1, 3}, Segment{0, 2, 3}));
  const bool documents = c.device.documents(), ranges = c.device.ranges.on;
  const bool other_masks = documents || ranges;
  const bool causal_alone = c.device.causal && c.device.window <= 0 && !other_masks;
  const bool window_alone = !c.device.causal && c.device.window > 0 && !other_masks;
  const bool documents_alone = !c.device.causal && c.device.window <= 0 && documents && !ranges;
  const bool bounded = c.device.causal || c.device.window > 0 || documents || ranges;
  const Case without_others = make_case(c.device.causal, c.device.window, kDocumentSets[0], nullptr);
  WalkCounts counts;
  for (const PositionMap& q : maps)
    for (const PositionMap& k : maps) {
      const DevicePositions dq = device_positions(q), dk = device_positions(k);
      const int seq_q = int(q.length()), seq_k = int(k.length());
      const int seq_fixed = keys_walked ? seq_q : seq_k, seq_walked = keys_walked ? seq_k : seq_q;
      const PositionMap& fixed_map = keys_walked ? q : k;
      const PositionMap& walked_map = keys_walked ? k : q;
      const bool exact_documents = documents_alone && increasing(q) && increasing(k);
      const bool exact_full = !ranges && c.device.any() && consecutive(q) && consecutive(k);
      for (int tile_rows : {1, 2, 3, 4, 5, 8}) {
        const int tiles = (seq_walked + tile_rows - 1) / tile_rows;
        for (int fixed_rows : {1, 2, 3, 4, 5, 7, 16})
          for (int fixed_first = 0; fixed_first < seq_fixed; ++fixed_first) {
            const WalkClaim w = walk_claim(c, keys_walked, dq, dk, seq_q, seq_k, fixed_first, fixed_rows, tile_rows);
            const WalkClaim plain =
                walk_claim(without_others, keys_walked, dq, dk, seq_q, seq_k, fixed_first, fixed_rows, tile_rows);
            ++counts.walks;
            counts.cut_by_other_masks += (plain.visit_end - plain.visit_begin) - (w.visit_end - w.visit_begin);
            auto where = [&] {  // built only for a failure's message
              std::ostringstream m;
              m << c.name << ": " << (keys_walked ? "query" : "key") << " rows [" << fixed_first << ", "
                << fixed_first + fixed_rows << ") of " << seq_fixed << " over " << (keys_walked ? "key" : "query")
                << " tiles of " << tile_rows << " of " << seq_walked << " (queries from " << q(0) << ", keys from "
                << k(0) << "): visits [" << w.visit_begin << ", " << w.visit_end << "), full [" << w.full_begin << ", "
                << w.full_end << "): ";
              return m.str();
            };
            const bool some_full = w.full_begin < w.full_end;
            if (w.visit_begin < 0 || w.visit_begin > w.visit_end || w.visit_end > tiles || w.full_begin > w.full_end ||
                (some_full && (w.full_begin < w.visit_begin || w.full_end > w.visit_end))) {
              ADD_FAILURE() << where() << "bounds out of order or outside [0, " << tiles << "]";
              return counts;
            }
            if (!bounded && (w.visit_begin != 0 || w.visit_end != tiles || some_full)) {
              ADD_FAILURE() << where() << "a walk that no part of the mask bounds must take every tile, none full";
              return counts;
            }
            if ((ranges || !c.device.any()) && some_full) {
              ADD_FAILURE() << where() << "tiles are known full under ranges or with no mask";
              return counts;
            }
            // Where the causal bound cuts the walk (the forwards' last tile, the backwards' first),
            // and where the window's does (the forwards' first, the backwards' last).
            const int causal_cut = keys_walked ? w.visit_end - 1 : w.visit_begin;
            const int window_cut = keys_walked ? w.visit_begin : w.visit_end - 1;
            const int tight = causal_alone ? causal_cut : window_alone ? window_cut : -1;
            // The tiles that hold a row some position between the fixed rows' least and greatest
            // could see (documents alone, on increasing maps).
            int reach_first = tiles, reach_last = -1;
            if (exact_documents) {
              const int fixed_last = std::min(fixed_first + fixed_rows, seq_fixed) - 1;
              const std::int64_t span_lo = fixed_map(fixed_first), span_hi = fixed_map(fixed_last);
              for (int j = 0; j < seq_walked; ++j)
                for (std::int64_t x = span_lo; x <= span_hi; ++x)
                  if (keys_walked ? c.truth(x, walked_map(j)) : c.truth(walked_map(j), x)) {
                    reach_first = std::min(reach_first, j / tile_rows);
                    reach_last = std::max(reach_last, j / tile_rows);
                    break;
                  }
              const bool exact = reach_last >= 0 ? w.visit_begin == reach_first && w.visit_end == reach_last + 1
                                                 : w.visit_end - w.visit_begin <= 1;
              if (!exact) {
                ADD_FAILURE() << where() << "under documents alone the walk should take the tiles [" << reach_first
                              << ", " << reach_last + 1 << ") that hold a row the block's span of positions sees";
                return counts;
              }
            }
            for (int t = 0; t < tiles; ++t) {
              const int q0 = keys_walked ? fixed_first : t * tile_rows, q_rows = keys_walked ? fixed_rows : tile_rows;
              const int k0 = keys_walked ? t * tile_rows : fixed_first, k_rows = keys_walked ? tile_rows : fixed_rows;
              bool any = false, all = q0 + q_rows <= seq_q && k0 + k_rows <= seq_k;
              for (int i = q0; i < q0 + q_rows; ++i)
                for (int j = k0; j < k0 + k_rows; ++j) {
                  const bool visible = i < seq_q && j < seq_k && c.truth(q(i), k(j));
                  any = any || visible;
                  all = all && visible;
                }
              if ((t < w.visit_begin || t >= w.visit_end) && any) {
                ADD_FAILURE() << where() << "tile " << t << ", which the walk leaves out, has a visible pair";
                return counts;
              }
              const bool known_full = t >= w.full_begin && t < w.full_end;
              if (known_full &&
                  (!all || classify_tile(c.device, dq, dk, q0, q_rows, seq_q, k0, k_rows, seq_k) != TileKind::kFull)) {
                ADD_FAILURE() << where() << "tile " << t << ", taken as full, has a hidden pair or is not full";
                return counts;
              }
              if (exact_full && all && !known_full) {
                ADD_FAILURE() << where() << "tile " << t << " is inside the sequences with every pair visible, but "
                              << "the walk classifies it (both maps one piece of consecutive positions)";
                return counts;
              }
              if (t == tight && !any) {
                ADD_FAILURE() << where() << "the walk stops or starts at tile " << t << ", which has no visible pair";
                return counts;
              }
            }
          }
      }
    }
  return counts;
}

/// Walks of one kind under every mask family: causal or not, windows, documents, and random
/// ranges with or without the causal mask and a window. Returns the walks checked; the
/// documents and the ranges must cut both kinds of walk somewhere. A list longer than
/// DeviceRanges::kQuerySpanEntries (after indexing) bounds the forwards' walks and not the
/// backwards' (checked at the limit and one either side); the walks stay exact either way.
int check_walks_under_every_mask(bool keys_walked, unsigned seed) {
  int walks = 0;
  long cut_by_documents = 0, cut_by_ranges = 0;
  // Windows from one position to the longest a caller may give (whose reach from a position
  // does not fit int64).
  for (bool causal : {false, true})
    for (std::int64_t window : {std::int64_t(0), std::int64_t(1), std::int64_t(2), std::int64_t(5), std::int64_t(9),
                                std::numeric_limits<std::int64_t>::max()})
      for (const auto& docs : kDocumentSets) {
        const WalkCounts n = check_walks(make_case(causal, window, docs, nullptr), keys_walked);
        walks += n.walks;
        cut_by_documents += n.cut_by_other_masks;
      }
  std::mt19937_64 rng(seed);
  for (int trial = 0; trial < 8; ++trial) {
    const std::vector<rfa_mask_range_t> list = rfa_test::random_mask_ranges(rng, S, 1 + trial, {0, 3, 5, 9, 12, 15});
    const MaskRanges ranges(list.data(), std::int64_t(list.size()), S, "ranges");
    const bool causal = trial % 2 == 1;
    const std::int64_t window = trial % 4 >= 2 ? 3 : 0;
    const auto& docs = kDocumentSets[std::size_t(trial) % 3];
    const WalkCounts n = check_walks(make_case(causal, window, docs, &ranges), keys_walked);
    walks += n.walks;
    if (docs.empty()) cut_by_ranges += n.cut_by_other_masks;
  }
  // Ranges that let nothing through: one entry whose keys all lie after its queries under the
  // causal kind, and none at all, whose index has no bands and, as on a device, no arrays. Every
  // walk is empty.
  const std::vector<rfa_mask_range_t> hiding = {{0, 10, 12, 20, 0, 0, RFA_RANGE_CAUSAL}};
  const MaskRanges hides_all(hiding.data(), std::int64_t(hiding.size()), S, "ranges"), none(nullptr, 0, S, "ranges");
  EXPECT_EQ(none.index().band_count, 0) << "an empty list of ranges has bands";
  for (const MaskRanges* r : {&hides_all, &none})
    walks += check_walks(make_case(false, 0, kDocumentSets[0], r), keys_walked).walks;
  EXPECT_GT(cut_by_documents, 0) << "the documents never cut a walk";
  EXPECT_GT(cut_by_ranges, 0) << "the ranges never cut a walk";
  // Lists at the backwards' limit and one either side of it, and a longer one: one entry per
  // visible pair (each query seeing the keys at or before it and those 8 or more after it, 288
  // pairs), the first n of them in order of queries. The forwards' walks are bounded by each; the
  // backwards' by those of at most DeviceRanges::kQuerySpanEntries entries after indexing.
  std::vector<rfa_mask_range_t> pairs;
  for (std::int64_t q = 0; q < S; ++q)
    for (std::int64_t k = 0; k < S; ++k)
      if (k <= q || k >= q + 8) pairs.push_back({q, q + 1, k, k + 1, 0, 0, RFA_RANGE_FULL});
  constexpr std::int64_t limit = DeviceRanges::kQuerySpanEntries;
  for (const std::int64_t n : {limit - 1, limit, limit + 1, std::int64_t(pairs.size())}) {
    const MaskRanges list(pairs.data(), n, S, "ranges");
    const MaskRangeIndex index = list.index();
    EXPECT_EQ(index.band_offset[index.band_count], n) << "the list of " << n << " pairs indexes to another count";
    const WalkCounts cut = check_walks(make_case(false, 0, kDocumentSets[0], &list), keys_walked);
    walks += cut.walks;
    if (keys_walked || n <= limit)
      EXPECT_GT(cut.cut_by_other_masks, 0)
          << "a list of " << n << " ranges never cut a walk over " << (keys_walked ? "key" : "query") << " tiles";
    else
      EXPECT_EQ(cut.cut_by_other_masks, 0)
          << "a list of " << n << " ranges, past the limit, cut a walk over query tiles";
  }
  return walks;
}

// The forwards' walk over key tiles (key_tile_walk).
TEST(CudaMaskOnHost, KeyWalksBeginEndAndTakeFullTilesAsTheMaskSays) {
  EXPECT_GT(check_walks_under_every_mask(true, 31), 50000);
}

// The backwards' walk over query tiles (query_tile_walk).
TEST(CudaMaskOnHost, QueryWalksBeginEndAndTakeFullTilesAsTheMaskSays) {
  EXPECT_GT(check_walks_under_every_mask(false, 37), 50000);
}

// A window longer than any distance between positions hides nothing: the walks begin and end
// where they do without it, on maps far below and far above position 0 (the kernels' interface
// takes positions of either sign up to 2^60), where a position plus or less the window leaves
// int64.
TEST(CudaMaskOnHost, AWindowLongerThanEveryDistanceCutsNoWalk) {
  constexpr std::int64_t kFar = std::int64_t(1) << 60, kLongest = std::numeric_limits<std::int64_t>::max();
  const DevicePositions maps[] = {DevicePositions::one(-kFar, 1), DevicePositions::one(kFar - 1000, 3),
                                  DevicePositions::two(-kFar, 2, 40, kFar - 500, 1)};
  constexpr int kSeq = 100, kRows = 16;
  int walks = 0;
  for (bool causal : {false, true}) {
    const DeviceMask longest{causal, kLongest, nullptr, 0, DeviceRanges{}, nullptr};
    const DeviceMask unbounded{causal, 0, nullptr, 0, DeviceRanges{}, nullptr};
    for (const DevicePositions& q : maps)
      for (const DevicePositions& k : maps)
        for (int first = 0; first < kSeq; first += kRows) {
          // The same tiles walked, and under the causal mask the same known full (the window adds
          // no condition); KeyWalk and QueryWalkBounds name their bounds alike.
          auto expect_same = [&](const auto& walk, const auto& without, const char* what) {
            EXPECT_TRUE(walk.begin_tile == without.begin_tile && walk.end_tile == without.end_tile)
                << what << " from row " << first << (causal ? ", causal" : "") << ": tiles [" << walk.begin_tile << ", "
                << walk.end_tile << ") under the longest window, [" << without.begin_tile << ", " << without.end_tile
                << ") without one";
            if (causal) {
              EXPECT_TRUE(walk.full_begin == without.full_begin && walk.full_end == without.full_end)
                  << what << " from row " << first << ": other tiles known full";
            }
          };
          expect_same(key_tile_walk(longest, q, k, first, kRows, kSeq, kRows, kSeq),
                      key_tile_walk(unbounded, q, k, first, kRows, kSeq, kRows, kSeq), "queries");
          expect_same(query_tile_walk(longest, q, k, first, kRows, kSeq, kRows, kSeq),
                      query_tile_walk(unbounded, q, k, first, kRows, kSeq, kRows, kSeq), "keys");
          walks += 2;
        }
  }
  EXPECT_EQ(walks, 2 * 9 * 7 * 2);
}

TEST(CudaMaskOnHost, EachBatchEntryTakesItsOwnDocuments) {
  // Two entries' boundaries one after the other, and the offsets of each entry's list.
  std::vector<std::int64_t> all;
  std::vector<std::int64_t> offsets = {0};
  for (std::size_t e = 1; e < kDocumentSets.size(); ++e) {
    all.insert(all.end(), kDocumentSets[e].begin(), kDocumentSets[e].end());
    offsets.push_back(std::int64_t(all.size()));
  }
  for (bool causal : {false, true})
    for (int e = 0; e < 2; ++e) {
      const std::vector<std::int64_t>& own = kDocumentSets[std::size_t(e + 1)];
      Case c = make_case(causal, 4, own, nullptr);
      const DeviceMask batch{causal, 4, all.data(), std::int64_t(all.size()), DeviceRanges{}, offsets.data()};
      c.device = batch.for_entry(e);
      EXPECT_EQ(c.device.doc_offsets, nullptr);
      ASSERT_EQ(c.device.doc_bound_count, std::int64_t(own.size()));
      c.name += ", entry " + std::to_string(e) + " of a batch";
      check_every_tile(c);
    }
}

}  // namespace
}  // namespace detail
}  // namespace rfa_cuda
