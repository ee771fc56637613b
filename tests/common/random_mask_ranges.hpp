// SPDX-License-Identifier: BSD-3-Clause
// Random masks given as ranges (rfa_mask_range_t lists) for the tests, and the documented rule
// of which pairs an entry lets through, written independently of the library's index: every
// kind, empty and single-token ranges, entries that overlap, and bounds on `edges` (chunk or
// tile boundaries) and one either side of them.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "rfa/rfa.h"

namespace rfa_test {

/// The entry with its kind field holding `kind`, any int, stored through its bytes as C code may
/// (an rfa_range_kind_t in C++ may only hold the enum's own values).
inline rfa_mask_range_t with_kind(rfa_mask_range_t r, int kind) {
  std::memcpy(&r.kind, &kind, sizeof kind);
  return r;
}

/// Whether entry r lets query position q see key position k (rfa.h's rfa_range_kind_t).
inline bool range_lets_through(const rfa_mask_range_t& r, std::int64_t q, std::int64_t k) {
  if (q < r.q_begin || q >= r.q_end || k < r.k_begin || k >= r.k_end) return false;
  switch (r.kind) {
    case RFA_RANGE_FULL: return true;
    case RFA_RANGE_CAUSAL: return k - r.k_end <= q - r.q_end;
    case RFA_RANGE_ANTICAUSAL: return k - r.k_end > q - r.q_end;
    case RFA_RANGE_BAND: {
      const std::int64_t offset = (k - r.k_begin) - (q - r.q_begin);
      return offset >= r.band_lo && offset <= r.band_hi;
    }
  }
  return false;
}

/// Whether some entry of the list lets the pair through (the mask's union).
inline bool ranges_let_through(const std::vector<rfa_mask_range_t>& list, std::int64_t q, std::int64_t k) {
  for (const rfa_mask_range_t& r : list)
    if (range_lets_through(r, q, k)) return true;
  return false;
}

/// `count` random entries over a sequence of S tokens; half of the bounds are taken from
/// `edges` (each possibly moved by one either way), the rest anywhere; about one entry in eight
/// is empty in queries or keys and one in eight holds a single token.
inline std::vector<rfa_mask_range_t> random_mask_ranges(std::mt19937_64& rng, std::int64_t S, int count,
                                                        const std::vector<std::int64_t>& edges = {}) {
  auto uniform = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  auto bound = [&]() {
    std::int64_t b = uniform(0, S);
    if (!edges.empty() && uniform(0, 1) == 0)
      b = edges[std::size_t(uniform(0, std::int64_t(edges.size()) - 1))] + uniform(-1, 1);
    return std::clamp<std::int64_t>(b, 0, S);
  };
  std::vector<rfa_mask_range_t> list;
  for (int i = 0; i < count; ++i) {
    rfa_mask_range_t r{};
    std::int64_t qa = bound(), qb = bound(), ka = bound(), kb = bound();
    r.q_begin = std::min(qa, qb), r.q_end = std::max(qa, qb);
    r.k_begin = std::min(ka, kb), r.k_end = std::max(ka, kb);
    const std::int64_t shape = uniform(0, 7);
    if (shape == 0) r.q_end = r.q_begin;                       // empty
    if (shape == 1 && r.q_begin < S) r.q_end = r.q_begin + 1;  // a single query
    if (shape == 2 && r.k_begin < S) r.k_end = r.k_begin + 1;  // a single key
    r.kind = rfa_range_kind_t(uniform(0, 3));
    if (r.kind == RFA_RANGE_BAND) {
      r.band_lo = uniform(-S / 4, S / 8);
      r.band_hi = r.band_lo + uniform(0, S / 4);
    }
    list.push_back(r);
  }
  return list;
}

}  // namespace rfa_test
