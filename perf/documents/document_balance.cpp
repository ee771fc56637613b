// SPDX-License-Identifier: BSD-3-Clause
#include "document_balance.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "layout/sequence_layout.hpp"

namespace rfa {
namespace perf {

std::vector<RankWork> work_per_rank(rfa_layout_t layout, std::int64_t seq, int ranks, const kernels::MaskRule& rule,
                                    std::int64_t tile) {
  std::vector<RankWork> work(static_cast<std::size_t>(ranks));
  std::vector<PositionMap> maps;
  for (int r = 0; r < ranks; ++r) maps.push_back(layout::positions(layout, seq, ranks, r));
  for (int r = 0; r < ranks; ++r) {
    const PositionMap& q = maps[std::size_t(r)];
    const std::int64_t L = q.length();
    // Pairs, exactly: each query sees the keys of its document within the causal bound and
    // the window, an interval of positions.
    for (std::int64_t i = 0; i < L; ++i) {
      const std::int64_t p = q(i);
      const std::int64_t d = rule.document_of(p);
      std::int64_t lo = rule.documents() ? rule.doc_bounds[d] : 0;
      std::int64_t hi = rule.documents() ? rule.doc_bounds[d + 1] - 1 : seq - 1;
      if (rule.causal) hi = std::min(hi, p);
      if (rule.window > 0) lo = std::max(lo, p - rule.window + 1);
      work[std::size_t(r)].pairs += double(std::max<std::int64_t>(0, hi - lo + 1));
    }
    // Tiles, as the kernels classify them, against every block of the ring.
    for (int owner = 0; owner < ranks; ++owner) {
      const PositionMap& k = maps[std::size_t(owner)];
      for (std::int64_t r0 = 0; r0 < L; r0 += tile)
        for (std::int64_t c0 = 0; c0 < L; c0 += tile)
          if (kernels::classify_tile(rule, q, r0, std::min(r0 + tile, L), k, c0, std::min(c0 + tile, L)) !=
              kernels::TileVisibility::hidden)
            work[std::size_t(r)].tiles += 1;
    }
  }
  return work;
}

double imbalance(const std::vector<double>& values) {
  if (values.empty()) return 1.0;
  const double mean = std::accumulate(values.begin(), values.end(), 0.0) / double(values.size());
  return mean > 0 ? *std::max_element(values.begin(), values.end()) / mean : 1.0;
}

std::vector<std::int64_t> long_tailed_documents(std::int64_t seq, double median, double sigma, std::mt19937_64& rng) {
  std::lognormal_distribution<double> length(std::log(median), sigma);
  std::vector<std::int64_t> bounds = {0};
  while (bounds.back() < seq) {
    const std::int64_t n = std::max<std::int64_t>(1, std::llround(length(rng)));
    bounds.push_back(std::min(seq, bounds.back() + n));
  }
  return bounds;
}

}  // namespace perf
}  // namespace rfa
