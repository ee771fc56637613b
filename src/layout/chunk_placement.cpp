// SPDX-License-Identifier: BSD-3-Clause
#include "layout/chunk_placement.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.hpp"

namespace rfa::layout {

PositionMap ChunkPlacement::positions(int rank) const {
  return chunk_positions(chunks.at(std::size_t(rank)), chunk_length);
}

PositionMap chunk_positions(const std::vector<std::int64_t>& chunks, std::int64_t chunk_length) {
  PositionMap m;
  for (const std::int64_t c : chunks) {
    const std::int64_t start = c * chunk_length;
    Segment* last = m.count > 0 ? &m.seg[m.count - 1] : nullptr;
    if (last != nullptr && last->start + last->length == start) {
      last->length += chunk_length;  // the next chunk along: one segment
      continue;
    }
    require(m.count < PositionMap::kMaxSegments, "a placement gives a rank more than ", PositionMap::kMaxSegments,
            " separate chunks");
    m.seg[m.count++] = Segment{start, 1, chunk_length};
  }
  return m;
}

namespace {

/// Throws unless `chunk_work` has a multiple of P chunks that cut S evenly, each finite and not
/// negative.
void check_chunk_work(const std::vector<double>& chunk_work, std::int64_t seq_len, int ranks) {
  const std::int64_t chunks = std::int64_t(chunk_work.size());
  require(ranks >= 1 && chunks >= ranks && chunks % ranks == 0, "a placement needs a multiple of P = ", ranks,
          " chunks, got ", chunks);
  require(seq_len >= chunks && seq_len % chunks == 0, "a placement cuts S = ", seq_len, " into ", chunks,
          " equal chunks: S must be a multiple of ", chunks);
  for (const double w : chunk_work) require(std::isfinite(w) && w >= 0, "a chunk's work is ", w);
}

}  // namespace

ChunkPlacement place_chunks_by_work(const std::vector<double>& chunk_work, std::int64_t seq_len, int ranks) {
  check_chunk_work(chunk_work, seq_len, ranks);
  const std::int64_t chunks = std::int64_t(chunk_work.size());
  const std::int64_t per_rank = chunks / ranks;
  std::vector<std::int64_t> order(static_cast<std::size_t>(chunks));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) {
    return chunk_work[std::size_t(a)] > chunk_work[std::size_t(b)];
  });
  ChunkPlacement p;
  p.chunk_length = seq_len / chunks;
  p.chunks.resize(static_cast<std::size_t>(ranks));
  std::vector<double> load(static_cast<std::size_t>(ranks), 0.0);
  for (const std::int64_t chunk : order) {
    int best = -1;
    for (int r = 0; r < ranks; ++r) {
      const std::size_t i = std::size_t(r);
      if (std::int64_t(p.chunks[i].size()) < per_rank && (best < 0 || load[i] < load[std::size_t(best)])) best = r;
    }
    p.chunks[std::size_t(best)].push_back(chunk);
    load[std::size_t(best)] += chunk_work[std::size_t(chunk)];
  }
  for (std::vector<std::int64_t>& mine : p.chunks) std::sort(mine.begin(), mine.end());
  return p;
}

ChunkPlacement place_chunks_by_measures(const ChunkMeasures& chunk_work, std::int64_t seq_len, int ranks) {
  require(!chunk_work.empty(), "a placement needs at least one kind of work");
  const std::size_t kinds = chunk_work.size(), n = chunk_work[0].size();
  for (const std::vector<double>& kind : chunk_work) {
    require(kind.size() == n, "every kind of work needs a figure for each of the ", n, " chunks");
    check_chunk_work(kind, seq_len, ranks);
  }
  // Each kind's mean per rank; a kind no chunk has any of weighs nothing.
  std::vector<double> inverse_mean(kinds, 0.0);
  for (std::size_t k = 0; k < kinds; ++k) {
    const double total = std::accumulate(chunk_work[k].begin(), chunk_work[k].end(), 0.0);
    inverse_mean[k] = total > 0 ? double(ranks) / total : 0.0;
  }
  auto size = [&](std::size_t c) {
    double largest = 0;
    for (std::size_t k = 0; k < kinds; ++k) largest = std::max(largest, chunk_work[k][c] * inverse_mean[k]);
    return largest;
  };
  std::vector<std::int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::int64_t a, std::int64_t b) { return size(std::size_t(a)) > size(std::size_t(b)); });
  const std::int64_t per_rank = std::int64_t(n) / ranks;
  ChunkPlacement p;
  p.chunk_length = seq_len / std::int64_t(n);
  p.chunks.resize(static_cast<std::size_t>(ranks));
  std::vector<std::vector<double>> share(static_cast<std::size_t>(ranks), std::vector<double>(kinds, 0.0));
  for (const std::int64_t chunk : order) {
    int best = -1;
    double best_largest = 0, best_sum = 0;
    for (int r = 0; r < ranks; ++r) {
      if (std::int64_t(p.chunks[std::size_t(r)].size()) >= per_rank) continue;
      double largest = 0, sum = 0;
      for (std::size_t k = 0; k < kinds; ++k) {
        const double s = share[std::size_t(r)][k] + chunk_work[k][std::size_t(chunk)] * inverse_mean[k];
        largest = std::max(largest, s);
        sum += s;
      }
      if (best < 0 || largest < best_largest || (largest == best_largest && sum < best_sum)) {
        best = r;
        best_largest = largest;
        best_sum = sum;
      }
    }
    p.chunks[std::size_t(best)].push_back(chunk);
    for (std::size_t k = 0; k < kinds; ++k)
      share[std::size_t(best)][k] += chunk_work[k][std::size_t(chunk)] * inverse_mean[k];
  }
  for (std::vector<std::int64_t>& mine : p.chunks) std::sort(mine.begin(), mine.end());
  return p;
}

}  // namespace rfa::layout
