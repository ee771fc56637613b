// SPDX-License-Identifier: BSD-3-Clause
// One test problem for the portable kernels: random inputs quantized to the storage dtype,
// Kokkos views holding them, and the float64 reference computed from the same values.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cfenv>
#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/mask_ranges.hpp"
#include "kernels/flash_attention.hpp"
#include "reference_attention.hpp"
#include "tensor_test_support.hpp"

namespace rfa {
namespace test {

using kernels::Tensor3;
using kernels::Tensor4;

/// While in scope, an invalid operation, a division by zero or an overflow stops the test with
/// SIGFPE, as in a program built with gfortran's -ffpe-trap=invalid,zero,overflow, which calls
/// the kernels in an environment rfa's C ABI does not hold for them (the threads of a host
/// execution space keep the one they started with). The kernels raise none of them on finite
/// inputs, -inf scores (masked keys) and blocks far apart included; around their calls only
/// (the reference and the checks are the tests' own). On the calling thread: with host threads
/// (Kokkos OpenMP) the workers' share of a kernel runs untrapped, so the check is the Serial
/// build's.
class TrappedFloatingPointExceptions {
 public:
  TrappedFloatingPointExceptions() : before_(fegetexcept()) {
    feclearexcept(FE_ALL_EXCEPT);
    feenableexcept(FE_INVALID | FE_DIVBYZERO | FE_OVERFLOW);
  }
  ~TrappedFloatingPointExceptions() {
    fedisableexcept(FE_ALL_EXCEPT);
    feenableexcept(before_);
  }
  TrappedFloatingPointExceptions(const TrappedFloatingPointExceptions&) = delete;
  TrappedFloatingPointExceptions& operator=(const TrappedFloatingPointExceptions&) = delete;

 private:
  int before_;
};

struct CaseSpec {
  std::int64_t batch, seq_q, seq_k, heads, kv_heads, head_dim;
  rfa_mask_t mask;
  PositionMap q_pos, k_pos;  // count == 0: contiguous from 0
  float scale = 0.0f;
  std::int64_t window = 0;
  std::vector<std::int64_t> docs = {};  // packed documents' cumulative boundaries (empty: none)
  /// Per-sequence documents: batch + 1 offsets cutting `docs` into the entries' lists (empty:
  /// `docs` serves every entry).
  std::vector<std::int64_t> doc_offsets = {};
  float softcap = 0.0f;  // scores capped at +-softcap by tanh (0: none)
  /// A mask given as ranges (mask RFA_MASK_RANGES), validated and indexed; null: none.
  std::shared_ptr<const MaskRanges> ranges = nullptr;
  /// Head dim of V, out, dout and dV where it differs from head_dim (MLA); 0: head_dim.
  std::int64_t value_dim = 0;

  std::int64_t dv() const { return value_dim != 0 ? value_dim : head_dim; }

  std::string name() const {
    return "b" + std::to_string(batch) + "_sq" + std::to_string(seq_q) + "_sk" + std::to_string(seq_k) + "_h" +
           std::to_string(heads) + "x" + std::to_string(kv_heads) + "_d" + std::to_string(head_dim) +
           (value_dim != 0 ? "v" + std::to_string(value_dim) : "") + (mask == RFA_MASK_CAUSAL ? "_causal" : "_full") +
           (q_pos.count > 0 ? "_mapped" : "") + (window > 0 ? "_w" + std::to_string(window) : "") +
           (docs.empty() ? "" : "_docs" + std::to_string(docs.size() - 1)) + (doc_offsets.empty() ? "" : "_per_entry") +
           (softcap > 0.0f ? "_cap" + std::to_string(int(softcap * 100)) : "") +
           (ranges ? "_ranges" + std::to_string(ranges->entries().size()) : "");
  }
  kernels::AttentionParams params() const {
    auto p = kernels::make_params(batch, seq_q, seq_k, heads, kv_heads, head_dim, mask, scale);
    p.window = window;
    p.doc_bounds = docs.empty() ? nullptr : docs.data();  // `this` outlives the kernel call
    p.doc_bound_count = std::int64_t(docs.size());
    p.doc_offsets = doc_offsets.empty() ? nullptr : doc_offsets.data();
    p.softcap = softcap;
    p.value_dim = value_dim;
    if (ranges) p.ranges = ranges->index();
    if (q_pos.count > 0) p.q_pos = q_pos;
    if (k_pos.count > 0) p.k_pos = k_pos;
    return p;
  }
  reference::Problem problem() const {
    reference::Problem r;
    r.batch = batch;
    r.seq_q = seq_q;
    r.seq_k = seq_k;
    r.heads = heads;
    r.kv_heads = kv_heads;
    r.head_dim = head_dim;
    r.value_dim = value_dim;
    r.scale = scale;
    r.window = window;
    r.doc_bounds = docs;
    r.entry_doc_bounds = reference::split_document_lists(docs, doc_offsets);
    r.softcap = softcap;
    r.causal = mask == RFA_MASK_CAUSAL;
    r.ranges_on = ranges != nullptr;
    if (ranges)
      for (const rfa_mask_range_t& e : ranges->entries())
        r.ranges.push_back(
            {e.q_begin, e.q_end, e.k_begin, e.k_end, reference::Range::Kind(e.kind), e.band_lo, e.band_hi});
    const auto p = params();
    for (std::int64_t i = 0; i < seq_q; ++i) r.q_pos.push_back(p.q_pos(i));
    for (std::int64_t j = 0; j < seq_k; ++j) r.k_pos.push_back(p.k_pos(j));
    return r;
  }
};

inline void PrintTo(const CaseSpec& c, std::ostream* os) { *os << c.name(); }

/// A host tensor in storage type T with its values (after rounding to T) as doubles.
template <class T>
Tensor4<T> random_tensor(const char* name, std::int64_t a, std::int64_t b, std::int64_t c, std::int64_t d,
                         std::mt19937_64& rng, std::vector<double>& exact, double amplitude = 1.0) {
  Tensor4<T> t(std::string(name), a, b, c, d);
  std::uniform_real_distribution<double> dist(-amplitude, amplitude);
  exact.resize(t.size());
  T* data = t.data();
  for (std::size_t i = 0; i < t.size(); ++i) {
    data[i] = from_float<T>(float(dist(rng)));
    exact[i] = to_float(data[i]);
  }
  return t;
}

struct Comparison {
  double max_abs_error = 0.0;
  double max_abs_ref = 0.0;
  std::size_t mismatched_infinities = 0;
  std::size_t nans = 0;
  // Relative to the largest reference value; the floor keeps results that are exactly zero
  // in exact arithmetic (one visible key gives dq = dk = 0) from dividing rounding by zero.
  double relative() const { return max_abs_error / std::max(1e-2, max_abs_ref); }
};

/// Compares elementwise; -inf must match -inf exactly (lse of rows that see nothing).
inline Comparison compare(const std::vector<double>& got, const std::vector<double>& ref) {
  Comparison c;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    if (std::isnan(got[i])) {
      ++c.nans;
      continue;
    }
    if (std::isinf(ref[i]) || std::isinf(got[i])) {
      if (got[i] != ref[i]) ++c.mismatched_infinities;
      continue;
    }
    c.max_abs_error = std::max(c.max_abs_error, std::abs(got[i] - ref[i]));
    c.max_abs_ref = std::max(c.max_abs_ref, std::abs(ref[i]));
  }
  return c;
}

#define RFA_EXPECT_CLOSE(got, ref, tol, what)                                                                       \
  do {                                                                                                              \
    const auto rfa_cmp_ = ::rfa::test::compare(got, ref);                                                           \
    EXPECT_EQ(rfa_cmp_.nans, 0u) << what << ": NaN in result";                                                      \
    EXPECT_EQ(rfa_cmp_.mismatched_infinities, 0u) << what << ": infinities differ";                                 \
    EXPECT_LE(rfa_cmp_.relative(), tol) << what << ": max abs error " << rfa_cmp_.max_abs_error << " vs max |ref| " \
                                        << rfa_cmp_.max_abs_ref;                                                    \
    ::testing::Test::RecordProperty(what, std::to_string(rfa_cmp_.relative()));                                     \
  } while (0)

/// A balanced placement's rank: four chunks (390 rows), and another's three (450 keys), in
/// positions 0 .. 1400.
inline PositionMap four_chunks() {
  PositionMap m;
  m.seg[0] = {0, 1, 100};
  m.seg[1] = {400, 1, 70};
  m.seg[2] = {800, 1, 130};
  m.seg[3] = {1200, 1, 90};
  m.count = 4;
  return m;
}
inline PositionMap three_chunks() {
  PositionMap m;
  m.seg[0] = {100, 1, 150};
  m.seg[1] = {470, 1, 200};
  m.seg[2] = {1000, 1, 100};
  m.count = 3;
  return m;
}

/// The shapes every dtype is tested on: odd lengths, sq != sk, GQA/MQA, offsets and
/// two-segment (zigzag-like) and strided (stripe-like) position maps.
inline std::vector<CaseSpec> kernel_cases() {
  std::vector<CaseSpec> cases;
  auto add = [&](CaseSpec c) { cases.push_back(c); };
  for (rfa_mask_t mask : {RFA_MASK_NONE, RFA_MASK_CAUSAL}) {
    add({1, 1, 1, 1, 1, 8, mask, {}, {}});
    add({1, 37, 37, 2, 2, 16, mask, {}, {}});
    add({2, 130, 97, 4, 2, 64, mask, {}, {}});   // GQA, sq != sk, partial tiles
    add({1, 200, 211, 3, 1, 40, mask, {}, {}});  // MQA, d not a multiple of 16
    add({1, 100, 100, 2, 2, 128, mask, {}, {}});
    add({1, 64, 50, 2, 1, 256, mask, {}, {}});
    // Queries later in the sequence than the keys (a ring step seeing an earlier block).
    add({1, 96, 96, 2, 2, 32, mask, PositionMap::contiguous(96, 96), PositionMap::contiguous(0, 96)});
    // Keys after some or all queries: causal rows that see no key at all.
    add({1, 100, 100, 2, 2, 16, mask, PositionMap::contiguous(0, 100), PositionMap::contiguous(50, 100)});
    add({1, 30, 40, 1, 1, 8, mask, PositionMap::contiguous(0, 30), PositionMap::contiguous(100, 40)});
    // Zigzag-like: two segments per side, P = 3, S = 300: chunks of 50.
    add({1, 100, 100, 2, 1, 24, mask, PositionMap::two({50, 1, 50}, {200, 1, 50}),
         PositionMap::two({0, 1, 50}, {250, 1, 50})});
    // Stripe-like: stride 3.
    add({1, 101, 100, 2, 2, 48, mask, PositionMap::one({1, 3, 101}), PositionMap::one({2, 3, 100})});
  }
  // Sliding windows, causal or not: of 1 (each query sees itself only), inside a tile, across
  // tiles (tiles fully inside, partly inside and fully outside the window), larger than the
  // sequence, and on zigzag- and stripe-like position maps.
  auto windowed = [&](CaseSpec c, std::int64_t w) {
    c.window = w;
    add(c);
  };
  for (rfa_mask_t mask : {RFA_MASK_NONE, RFA_MASK_CAUSAL}) {
    windowed({1, 37, 37, 2, 2, 16, mask, {}, {}}, 1);
    windowed({1, 300, 300, 2, 1, 32, mask, {}, {}}, 17);
    windowed({2, 250, 230, 4, 2, 64, mask, {}, {}}, 130);
    windowed({1, 100, 100, 2, 2, 16, mask, {}, {}}, 1000);
    windowed({1, 100, 100, 2, 1, 24, mask, PositionMap::two({50, 1, 50}, {200, 1, 50}),
              PositionMap::two({0, 1, 50}, {250, 1, 50})},
             60);
    windowed({1, 101, 100, 2, 2, 48, mask, PositionMap::one({1, 3, 101}), PositionMap::one({2, 3, 100})}, 40);
    // A ring step's block whose first key tiles no query sees (the forwards copy only the
    // tiles seen, into slots that are not the tiles' indices): of 464 keys the last 103, then
    // two distant query chunks that see the first and the last of 1000 keys' tiles only.
    windowed({1, 64, 464, 2, 1, 64, mask, PositionMap::contiguous(400, 64), PositionMap::contiguous(0, 464)}, 40);
    windowed(
        {1, 64, 1000, 2, 2, 32, mask, PositionMap::two({0, 1, 32}, {900, 1, 32}), PositionMap::contiguous(0, 1000)},
        20);
  }
  // Packed documents (cumulative boundaries over the global positions), causal or not, alone
  // and with a window: documents of length 1, documents shorter and longer than a tile, an
  // empty document, boundaries inside tiles; on contiguous, zigzag- and stripe-like maps, and
  // queries later than keys (a ring step), where some key tiles share no document.
  auto packed = [&](CaseSpec c, std::vector<std::int64_t> bounds, std::int64_t w = 0) {
    c.docs = std::move(bounds);
    c.window = w;
    add(c);
  };
  for (rfa_mask_t mask : {RFA_MASK_NONE, RFA_MASK_CAUSAL}) {
    packed({1, 37, 37, 2, 2, 16, mask, {}, {}}, {0, 1, 2, 3, 20, 20, 36, 37});
    packed({1, 300, 300, 2, 1, 32, mask, {}, {}}, {0, 5, 150, 151, 290, 300});
    packed({2, 250, 250, 4, 2, 64, mask, {}, {}}, {0, 100, 250}, 40);
    packed({1, 100, 100, 2, 1, 24, mask, PositionMap::two({50, 1, 50}, {200, 1, 50}),
            PositionMap::two({0, 1, 50}, {250, 1, 50})},
           {0, 30, 75, 120, 260, 300});
    packed({1, 101, 100, 2, 2, 48, mask, PositionMap::one({1, 3, 101}), PositionMap::one({2, 3, 100})},
           {0, 1, 17, 170, 171, 303});
    packed({1, 96, 96, 2, 2, 32, mask, PositionMap::contiguous(96, 96), PositionMap::contiguous(0, 96)},
           {0, 40, 100, 192});
    packed({1, 64, 464, 2, 2, 32, mask, PositionMap::contiguous(400, 64), PositionMap::contiguous(0, 464)},
           {0, 380, 420, 470});
    // Every key in a document of its own, after the queries' documents: every row sees nothing.
    packed({1, 30, 40, 1, 1, 8, mask, PositionMap::contiguous(0, 30), PositionMap::contiguous(100, 40)}, {0, 30, 140});
    // An empty first and an empty last document (boundaries 0, 0, ... S, S).
    packed({1, 37, 37, 2, 2, 16, mask, {}, {}}, {0, 0, 4, 20, 37, 37});
    // Four chunks shorter than a query tile, each in a document of its own (the last one's with
    // no keys): the forward's query tiles end at the chunks' boundaries (kernels/query_tiles.hpp).
    packed({1, 390, 450, 2, 1, 32, mask, four_chunks(), three_chunks()}, {0, 300, 700, 1100, 1400});
  }
  // Per-sequence documents: each batch entry its own boundaries (one of them none), on the host
  // kernels' tile edges and one either side (the forward's 192 x 96, the backward's 96 x 192,
  // the bf16 kernels' 128s); entries whose documents hide key tiles another entry sees (the
  // key tiles copied and skipped must be every entry's); queries later than keys, where one
  // entry sees nothing of the block; windows, GQA and position maps.
  auto per_entry = [&](CaseSpec c, const std::vector<std::vector<std::int64_t>>& lists, std::int64_t w = 0) {
    c.batch = std::int64_t(lists.size());
    c.window = w;
    const reference::DocumentLists packed = reference::pack_document_lists(lists);
    c.docs = packed.bounds;
    c.doc_offsets = packed.offsets;
    add(c);
  };
  for (rfa_mask_t mask : {RFA_MASK_NONE, RFA_MASK_CAUSAL}) {
    for (std::int64_t n : {95, 96, 97, 191, 192, 193})
      per_entry({1, n, n, 2, 1, 32, mask, {}, {}},
                {{0, std::min<std::int64_t>(n, 96), n}, {}, {0, n / 2 - 1, n / 2, n / 2 + 1, n}, {0, 1, n - 1, n}});
    per_entry({1, 200, 200, 4, 2, 64, mask, {}, {}}, {{0, 95, 96, 97, 127, 128, 129, 200}, {0, 200}, {}}, 40);
    // Entry 0: documents end before the keys start (sees nothing); entry 1 sees part of them.
    per_entry({1, 96, 96, 2, 2, 32, mask, PositionMap::contiguous(96, 96), PositionMap::contiguous(0, 96)},
              {{0, 96, 192}, {0, 50, 150, 192}, {}});
    per_entry({1, 100, 100, 2, 1, 24, mask, PositionMap::two({50, 1, 50}, {200, 1, 50}),
               PositionMap::two({0, 1, 50}, {250, 1, 50})},
              {{0, 30, 75, 120, 260, 300}, {0, 300}, {0, 100, 200, 300}});
    per_entry({1, 101, 100, 2, 2, 48, mask, PositionMap::one({1, 3, 101}), PositionMap::one({2, 3, 100})},
              {{0, 1, 17, 170, 171, 303}, {}}, 60);
    // Entries whose query tiles differ: cut at the chunks' boundaries, or not.
    per_entry({1, 390, 450, 2, 1, 32, mask, four_chunks(), three_chunks()},
              {{0, 300, 700, 1100, 1400}, {}, {0, 450, 1400}});
  }
  // A custom softmax scale.
  CaseSpec scaled{1, 50, 70, 2, 2, 32, RFA_MASK_CAUSAL, {}, {}};
  scaled.scale = 0.3f;
  add(scaled);
  // Soft-capped scores: a cap that bends most scores (0.25, with a scale that spreads them to
  // several times it), one that bends only the largest (1) and one that barely bends any (20);
  // with windows, documents, position maps, GQA and rows that see nothing.
  auto capped = [&](CaseSpec c, float cap, float scale = 0.0f) {
    c.softcap = cap;
    c.scale = scale;
    add(c);
  };
  for (rfa_mask_t mask : {RFA_MASK_NONE, RFA_MASK_CAUSAL}) {
    capped({2, 130, 97, 4, 2, 64, mask, {}, {}}, 0.25f, 1.0f);
    capped({1, 200, 211, 3, 1, 40, mask, {}, {}}, 1.0f, 0.5f);
    capped({1, 100, 100, 2, 2, 128, mask, {}, {}}, 20.0f);
    capped({1, 100, 100, 2, 1, 24, mask, PositionMap::two({50, 1, 50}, {200, 1, 50}),
            PositionMap::two({0, 1, 50}, {250, 1, 50}), 0.0f, 60},
           0.5f, 0.8f);
    capped({1, 300, 300, 2, 1, 32, mask, {}, {}, 0.0f, 17, {0, 5, 150, 151, 290, 300}}, 1.0f, 0.7f);
    capped({1, 30, 40, 1, 1, 8, mask, PositionMap::contiguous(0, 30), PositionMap::contiguous(100, 40)}, 2.0f);
    // Keys after some or all queries: causal rows that see no key, and rows that see part of a tile.
    capped({1, 100, 100, 2, 2, 16, mask, PositionMap::contiguous(0, 100), PositionMap::contiguous(50, 100)}, 0.5f,
           0.8f);
    // Lengths one either side of the host kernels' tiles (192 query rows, 96 keys).
    capped({1, 193, 95, 2, 1, 16, mask, {}, {}}, 0.5f, 0.8f);
    capped({1, 191, 97, 2, 2, 16, mask, {}, {}}, 0.5f, 0.8f);
  }
  // Masks given as ranges (the mask RFA_MASK_RANGES; no causal part of its own), with lengths on
  // the host kernels' tiles and one either side (the forward's 192 x 96, the backward's 96 x 192,
  // the bf16 kernels' 128s), entry bounds on those edges and one either side: a band with a
  // prefix seen by all (rows of one or two spans), a 2-D neighbourhood of 24-point grid rows
  // (rows of several spans, many partial tiles), rows of more pieces than the kernels' spans
  // keep, an entry no query sees, and windows, documents and position maps on top.
  auto ranged = [&](CaseSpec c, std::vector<rfa_mask_range_t> list) {
    c.mask = RFA_MASK_RANGES;
    constexpr std::int64_t kSeq = 1000;  // beyond every position these cases use
    c.ranges = std::make_shared<const MaskRanges>(list.data(), std::int64_t(list.size()), kSeq, "ranges");
    add(c);
  };
  for (std::int64_t n : {95, 96, 97, 191, 192, 193}) {
    ranged({1, n, n, 2, 1, 32, RFA_MASK_NONE, {}, {}}, {{0, n, 0, n, -40, 0, RFA_RANGE_BAND},
                                                        {0, n, 0, 96, 0, 0, RFA_RANGE_FULL},
                                                        {95, 193, 127, 129, 0, 0, RFA_RANGE_FULL}});
    std::vector<rfa_mask_range_t> grid;
    for (std::int64_t y = 0; y * 24 < n; ++y)
      for (std::int64_t dy = -1; dy <= 1; ++dy)
        if (y + dy >= 0 && (y + dy) * 24 < n)
          grid.push_back({24 * y, std::min(n, 24 * y + 24), 24 * (y + dy), std::min(n, 24 * (y + dy) + 24), -2, 2,
                          RFA_RANGE_BAND});
    ranged({1, n, n, 2, 2, 16, RFA_MASK_NONE, {}, {}}, grid);
  }
  std::vector<rfa_mask_range_t> pieces = {{0, 200, 400, 400, 0, 0, RFA_RANGE_FULL}};  // empty
  for (std::int64_t k = 0; k < 20; ++k) pieces.push_back({0, 130, 5 * k, 5 * k + 2, 0, 0, RFA_RANGE_FULL});
  pieces.push_back({120, 200, 0, 200, 0, 0, RFA_RANGE_ANTICAUSAL});
  ranged({2, 200, 190, 4, 2, 64, RFA_MASK_NONE, {}, {}}, pieces);
  CaseSpec windowed_ranges{1, 193, 97, 2, 1, 24, RFA_MASK_NONE, {}, {}};
  windowed_ranges.window = 60;
  windowed_ranges.docs = {0, 50, 96, 97, 400};
  ranged(windowed_ranges, {{0, 400, 0, 400, 0, 0, RFA_RANGE_CAUSAL}, {0, 400, 0, 10, 0, 0, RFA_RANGE_FULL}});
  ranged({1, 100, 100, 2, 1, 24, RFA_MASK_NONE, PositionMap::two({50, 1, 50}, {200, 1, 50}),
          PositionMap::two({0, 1, 50}, {250, 1, 50})},
         {{0, 300, 0, 300, 0, 0, RFA_RANGE_CAUSAL}, {40, 260, 0, 120, -30, 30, RFA_RANGE_BAND}});
  ranged({1, 101, 100, 2, 2, 48, RFA_MASK_NONE, PositionMap::one({1, 3, 101}), PositionMap::one({2, 3, 100})},
         {{0, 303, 0, 303, -50, 0, RFA_RANGE_BAND}, {150, 303, 0, 303, 0, 0, RFA_RANGE_ANTICAUSAL}});
  // Value head dims other than head_dim (MLA's 192 / 128, and V wider than Q and K): lengths on
  // the host kernels' tiles and one either side, both multiples of the bf16 products' 32 (their
  // kernels) or not (the portable ones), GQA and MQA, windows, documents per entry, soft caps,
  // ranges and position maps.
  auto split = [&](CaseSpec c, std::int64_t value_dim) {
    c.value_dim = value_dim;
    add(c);
  };
  for (rfa_mask_t mask : {RFA_MASK_NONE, RFA_MASK_CAUSAL}) {
    for (std::int64_t n : {95, 96, 97, 127, 128, 129, 191, 192, 193}) split({1, n, n, 2, 1, 192, mask, {}, {}}, 128);
    split({1, 1, 1, 1, 1, 8, mask, {}, {}}, 16);  // one query, one key
    // Keys after some or all queries: causal rows that see no key at all.
    split({1, 100, 100, 2, 2, 32, mask, PositionMap::contiguous(0, 100), PositionMap::contiguous(50, 100)}, 64);
    split({2, 130, 97, 4, 2, 32, mask, {}, {}}, 64);
    split({1, 200, 211, 3, 1, 40, mask, {}, {}}, 8);
    split({1, 100, 100, 2, 2, 64, mask, {}, {}, 0.0f, 30}, 256);
    split({1,
           100,
           100,
           2,
           1,
           24,
           mask,
           PositionMap::two({50, 1, 50}, {200, 1, 50}),
           PositionMap::two({0, 1, 50}, {250, 1, 50}),
           0.0f,
           60,
           {0, 30, 75, 120, 260, 300}},
          16);
  }
  CaseSpec mla_entries{3, 193, 193, 2, 1, 192, RFA_MASK_CAUSAL, {}, {}};
  const reference::DocumentLists lists = reference::pack_document_lists({{0, 96, 193}, {}, {0, 1, 128, 193}});
  mla_entries.docs = lists.bounds;
  mla_entries.doc_offsets = lists.offsets;
  split(mla_entries, 128);
  CaseSpec mla_capped{1, 150, 150, 4, 2, 192, RFA_MASK_CAUSAL, {}, {}};
  mla_capped.softcap = 0.5f;
  mla_capped.scale = 0.8f;
  split(mla_capped, 128);
  CaseSpec mla_ranges{1, 193, 193, 2, 1, 192, RFA_MASK_RANGES, {}, {}};
  const std::vector<rfa_mask_range_t> band = {{0, 193, 0, 193, -40, 0, RFA_RANGE_BAND},
                                              {0, 193, 0, 96, 0, 0, RFA_RANGE_FULL}};
  mla_ranges.ranges = std::make_shared<const MaskRanges>(band.data(), std::int64_t(band.size()), 193, "ranges");
  split(mla_ranges, 128);
  // Windows on the bf16 kernels' 128-row tiles and one either side.
  for (rfa_mask_t mask : {RFA_MASK_NONE, RFA_MASK_CAUSAL})
    for (std::int64_t w : {127, 128, 129}) windowed({1, 300, 300, 2, 1, 32, mask, {}, {}}, w);
  // Ranges with documents per batch entry (one entry with none), lengths on the bf16 kernels'
  // 128s and one either side; soft-capped too, where the ranges hide parts of tiles.
  for (std::int64_t n : {127, 128, 129}) {
    CaseSpec c{1, n, n, 2, 1, 32, RFA_MASK_RANGES, {}, {}};
    c.batch = 3;
    const reference::DocumentLists lists = reference::pack_document_lists({{0, n / 2, n}, {}, {0, 1, n - 1, n}});
    c.docs = lists.bounds;
    c.doc_offsets = lists.offsets;
    const std::vector<rfa_mask_range_t> list = {{0, n, 0, n, -40, 0, RFA_RANGE_BAND},
                                                {0, n, 0, 64, 0, 0, RFA_RANGE_FULL},
                                                {100, n, 126, n, 0, 0, RFA_RANGE_ANTICAUSAL}};
    c.ranges = std::make_shared<const MaskRanges>(list.data(), std::int64_t(list.size()), n, "ranges");
    add(c);
    c.softcap = 0.5f;
    c.scale = 0.8f;
    add(c);
  }
  // A balanced placement's maps: a rank's chunks scattered over the sequence, each as long as a
  // tile of the host kernels (the forward's 192 x 96, the backward's 96 x 192) or one shorter or
  // longer, so that a tile's rows or keys cross from one chunk to the next exactly at a tile edge
  // or one row away; under the causal mask, a window with documents on a chunk's edge and one
  // beside it, and ranges whose bounds sit on the chunks' edges.
  for (std::int64_t n : {95, 96, 97, 191, 192, 193}) {
    auto chunks = [n](std::initializer_list<std::int64_t> which) {
      PositionMap m;
      for (const std::int64_t c : which) m.seg[m.count++] = Segment{c * n, 1, n};
      return m;
    };
    const PositionMap q = chunks({2, 5, 9}), k = chunks({0, 5, 7});
    add({1, 3 * n, 3 * n, 2, 1, 16, RFA_MASK_CAUSAL, q, k});
    CaseSpec windowed{1, 3 * n, 3 * n, 2, 2, 16, RFA_MASK_CAUSAL, q, k};
    windowed.window = n + 1;
    windowed.docs = {0, 5 * n, 5 * n + 1, 10 * n};
    add(windowed);
    CaseSpec sparse{1, 3 * n, 3 * n, 2, 1, 16, RFA_MASK_RANGES, q, k};
    const std::vector<rfa_mask_range_t> list = {{2 * n, 3 * n, 0, n - 1, 0, 0, RFA_RANGE_FULL},
                                                {5 * n - 1, 6 * n + 1, 5 * n, 8 * n, 0, 0, RFA_RANGE_CAUSAL},
                                                {9 * n + 1, 10 * n, 7 * n - 1, 7 * n + 2, 0, 0, RFA_RANGE_FULL},
                                                {2 * n, 10 * n, 0, 10 * n, -n, -n + 2, RFA_RANGE_BAND}};
    sparse.ranges = std::make_shared<const MaskRanges>(list.data(), std::int64_t(list.size()), 10 * n, "ranges");
    add(sparse);
  }
  return cases;
}

}  // namespace test
}  // namespace rfa
