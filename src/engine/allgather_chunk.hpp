// SPDX-License-Identifier: BSD-3-Clause
// How many K/V heads the KV all-gather (allgather_attention.hpp) gathers and computes at once,
// and the bytes of its buffers, for an attention config. On the host one head (the least
// memory: the kernels spread a chunk's rows over the cores); on a device the rule of
// allgather_chunk_rule.hpp. A function of the agreed configuration and the rank count alone,
// so every rank reaches the same chunk; the explicit strategy (setup) and the model's plans
// (model/plan.cpp) both take it from here.
#pragma once

#include <cstdint>

#include "engine/allgather_chunk_rule.hpp"
#include "engine/attention_config.hpp"
#include "engine/attention_strategy.hpp"

namespace rfa {
namespace engine {

/// `config` over `ranks` ranks in the terms of allgather_chunk_rule.hpp.
AllGatherShape allgather_shape(const AttentionConfig& config, int ranks);

/// The K/V heads per chunk of the KV all-gather for `config` over `ranks` ranks: 1 on the host;
/// on a device, device_kv_heads_per_chunk. Always a divisor of kv_heads.
std::int64_t allgather_kv_heads_per_chunk(const AttentionConfig& config, int ranks);

/// `choice` with its kv_heads_per_chunk set by allgather_kv_heads_per_chunk where it is the KV
/// all-gather; any other choice as it is.
StrategyChoice with_allgather_chunk(StrategyChoice choice, const AttentionConfig& config, int ranks);

}  // namespace engine
}  // namespace rfa
