// SPDX-License-Identifier: BSD-3-Clause
#include "engine/allgather_chunk.hpp"

#include "core/dtype.hpp"

namespace rfa {
namespace engine {

AllGatherShape allgather_shape(const AttentionConfig& c, int ranks) {
  const std::int64_t p = ranks < 1 ? 1 : ranks;
  return AllGatherShape{c.batch, c.heads,    c.kv_heads, c.seq_total / p,
                        p,       c.head_dim, c.dv(),     std::int64_t(dtype_size(c.dtype))};
}

std::int64_t allgather_kv_heads_per_chunk(const AttentionConfig& c, int ranks) {
  if (c.device != Device::cuda || c.kv_heads <= 1 || ranks < 1) return 1;
  return device_kv_heads_per_chunk(allgather_shape(c, ranks));
}

StrategyChoice with_allgather_chunk(StrategyChoice choice, const AttentionConfig& config, int ranks) {
  if (choice.kind == StrategyKind::allgather) choice.kv_heads_per_chunk = allgather_kv_heads_per_chunk(config, ranks);
  return choice;
}

}  // namespace engine
}  // namespace rfa
