// SPDX-License-Identifier: BSD-3-Clause
// How evenly a layout spreads the attention work of packed documents over the ranks: the
// scores each rank computes (visible query-key pairs, exact) and the score tiles its kernels
// run (tiles not fully masked, counted with the kernels' own classification), summed over
// all ring steps. Counts, not timings: the same on every machine.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "kernels/tile_visibility.hpp"
#include "rfa/rfa.h"

namespace rfa {
namespace perf {

struct RankWork {
  double pairs = 0;  ///< visible (query, key) pairs of this rank's queries
  double tiles = 0;  ///< tiles of tile x tile scores that are not fully masked
};

/// Work of every ring position for `layout` over `ranks` ranks, sequence length `seq`, mask
/// `rule` (its documents, causal mask and window), tiles of `tile` x `tile` scores.
std::vector<RankWork> work_per_rank(rfa_layout_t layout, std::int64_t seq, int ranks, const kernels::MaskRule& rule,
                                    std::int64_t tile);

/// max / mean of the values (1 = perfectly even).
double imbalance(const std::vector<double>& values);

/// Cumulative boundaries of documents packed into `seq` tokens, lengths drawn from a long-tailed
/// distribution (log-normal with median `median` and shape sigma, at least 1 token, the last
/// document cut to fit), as when documents are packed into training sequences.
std::vector<std::int64_t> long_tailed_documents(std::int64_t seq, double median, double sigma, std::mt19937_64& rng);

}  // namespace perf
}  // namespace rfa
