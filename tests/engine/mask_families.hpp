// SPDX-License-Identifier: BSD-3-Clause
// The benchmark's mask families (perf/masks/mask_balance.hpp) over S tokens, as the balanced
// layout's tests place them: the dedicated options' causal mask alone, with a window and with
// skewed documents, and the families given as ranges.
#pragma once

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "core/mask_range_builders.hpp"
#include "rfa/rfa.h"

namespace rfa::engine {

struct Family {
  std::string name;
  rfa_mask_t mask;
  std::vector<rfa_mask_range_t> ranges;
  std::int64_t window = 0;
  std::vector<std::int64_t> documents;
};

/// The benchmark's families over S tokens (perf/masks/mask_balance.hpp), and the dedicated
/// options' causal mask with skewed documents and with a window.
inline std::vector<Family> families(std::int64_t S) {
  std::mt19937_64 rng(7);
  std::vector<std::int64_t> skewed = {0};  // many short documents, then ever longer ones
  for (std::int64_t len = 3; skewed.back() + len < S; len += len / 3 + 1) skewed.push_back(skewed.back() + len);
  skewed.push_back(S);
  std::vector<Family> all;
  all.push_back({"causal", RFA_MASK_CAUSAL, {}, 0, {}});
  all.push_back({"causal_window", RFA_MASK_CAUSAL, {}, S / 5 + 1, {}});
  all.push_back({"causal_documents", RFA_MASK_CAUSAL, {}, 0, skewed});
  all.push_back(
      {"skewed_documents", RFA_MASK_RANGES, document_ranges(skewed.data(), std::int64_t(skewed.size()), true), 0, {}});
  all.push_back({"prefix_lm", RFA_MASK_RANGES, prefix_lm_ranges(S, S / 4), 0, {}});
  all.push_back({"block_causal", RFA_MASK_RANGES, block_causal_ranges(S, S / 64), 0, {}});
  all.push_back({"neighbourhood_2d", RFA_MASK_RANGES, grid_neighbourhood_ranges(256, S / 256, 1, 8), 0, {}});
  std::vector<rfa_mask_range_t> sparse;
  std::uniform_int_distribution<std::int64_t> start(0, S - 1), side(1, S / 16);
  for (std::int64_t n = 0; n < S / 256; ++n) {
    const std::int64_t q = start(rng), k = start(rng);
    sparse.push_back({q, std::min(S, q + side(rng)), k, std::min(S, k + side(rng)), 0, 0, RFA_RANGE_FULL});
  }
  all.push_back({"random_sparse", RFA_MASK_RANGES, sparse, 0, {}});
  return all;
}

}  // namespace rfa::engine
