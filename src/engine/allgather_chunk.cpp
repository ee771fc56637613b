// SPDX-License-Identifier: BSD-3-Clause
#include "engine/allgather_chunk.hpp"

#include <algorithm>

namespace rfa {
namespace engine {

std::int64_t allgather_kv_heads_per_chunk(const AttentionConfig& c, int ranks) {
  if (c.device != Device::cuda || c.kv_heads <= 1 || ranks < 1) return 1;
  constexpr std::int64_t kTileRows = 128;  // the query rows of one CTA of every CUDA forward
  const std::int64_t local_rows = c.seq_total / ranks;
  const std::int64_t group = std::max<std::int64_t>(1, c.heads / c.kv_heads);
  const std::int64_t tiles_per_kv_head =
      std::max<std::int64_t>(1, c.batch * ((local_rows + kTileRows - 1) / kTileRows) * group);
  const std::int64_t most = c.kv_heads / 2;  // two chunks at least, so that a gather overlaps a compute
  std::int64_t chunk = 1;
  for (std::int64_t d = 1; d <= most; ++d) {
    if (c.kv_heads % d != 0) continue;
    chunk = d;
    if (tiles_per_kv_head * d >= kAllGatherDeviceQueryTiles) break;
  }
  return chunk;
}

}  // namespace engine
}  // namespace rfa
