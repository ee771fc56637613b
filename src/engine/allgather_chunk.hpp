// SPDX-License-Identifier: BSD-3-Clause
// How many K/V heads the KV all-gather (allgather_attention.hpp) gathers and computes at once.
// On the host one (the least memory: the kernels spread a chunk's rows over the cores). On a
// GPU a chunk's forward launches one CTA per 128 query rows and query head of the chunk, and one
// K/V head of a short local slice leaves most of the device idle (B=1, S=32768, 16 heads,
// P = 4: 64 CTAs on an H100's 132 SMs); so there the chunk is the fewest K/V heads, dividing
// kv_heads, whose forward has kAllGatherDeviceQueryTiles query tiles, while at least two chunks
// remain where there are two heads or more (the gather of the next one is in flight while one
// computes). A function of the agreed configuration and the rank count alone, so every rank
// reaches the same chunk.
#pragma once

#include <cstdint>

#include "engine/attention_config.hpp"

namespace rfa {
namespace engine {

/// Query tiles (128 rows of one query head) a device chunk's forward aims for: four waves of
/// one CTA on each SM of a 132-SM GPU, less the last wave's rounding.
constexpr std::int64_t kAllGatherDeviceQueryTiles = 512;

/// The K/V heads per chunk of the KV all-gather for `config` over `ranks` ranks: 1 on the host;
/// on a device, as the file comment says. Always a divisor of kv_heads.
std::int64_t allgather_kv_heads_per_chunk(const AttentionConfig& config, int ranks);

}  // namespace engine
}  // namespace rfa
