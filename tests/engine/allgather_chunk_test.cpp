// SPDX-License-Identifier: BSD-3-Clause
// The KV all-gather's K/V heads per chunk (engine/allgather_chunk.hpp): one on the host; on a
// device the fewest that give a chunk's forward kAllGatherDeviceQueryTiles query tiles, a
// divisor of kv_heads, with two chunks left to overlap a gather with a compute. Checked against
// a brute-force search over every divisor, and on the shapes the device check measures.
#include <gtest/gtest.h>

#include <cstdint>

#include "engine/allgather_chunk.hpp"

namespace rfa::engine {
namespace {

AttentionConfig device_config(std::int64_t batch, std::int64_t seq, std::int64_t heads, std::int64_t kv_heads) {
  AttentionConfig c;
  c.device = Device::cuda;
  c.batch = batch;
  c.seq_total = seq;
  c.heads = heads;
  c.kv_heads = kv_heads;
  c.head_dim = 128;
  return c;
}

// The rule restated as a search over the divisors of kv_heads up to kv_heads / 2: the first whose
// chunk reaches the target, else the last; 1 where kv_heads < 2.
std::int64_t searched(const AttentionConfig& c, int ranks) {
  const std::int64_t rows = c.seq_total / ranks, tiles = c.batch * ((rows + 127) / 128) * (c.heads / c.kv_heads);
  std::int64_t last = 1;
  for (std::int64_t d = 1; d <= c.kv_heads / 2; ++d) {
    if (c.kv_heads % d != 0) continue;
    if (tiles * d >= kAllGatherDeviceQueryTiles) return d;
    last = d;
  }
  return last;
}

TEST(AllGatherChunk, OneKvHeadOnTheHost) {
  AttentionConfig c = device_config(1, 32768, 16, 16);
  c.device = Device::host;
  EXPECT_EQ(allgather_kv_heads_per_chunk(c, 4), 1);
}

TEST(AllGatherChunk, EnoughQueryTilesOnADevice) {
  // The device check's shapes: B=1 H=16 S=32768 at P = 2, 4, 8 (64 tiles a head at P = 4).
  EXPECT_EQ(allgather_kv_heads_per_chunk(device_config(1, 32768, 16, 16), 2), 4);
  EXPECT_EQ(allgather_kv_heads_per_chunk(device_config(1, 32768, 16, 16), 4), 8);
  EXPECT_EQ(allgather_kv_heads_per_chunk(device_config(1, 32768, 16, 16), 8), 8);  // two chunks at least
  // GQA 16:4 at S=16384, P = 4: 32 tiles a query head, 128 a K/V head, 2 K/V heads a chunk.
  EXPECT_EQ(allgather_kv_heads_per_chunk(device_config(1, 16384, 16, 4), 4), 2);
  // A million tokens over 8 ranks: one K/V head has 1024 tiles.
  EXPECT_EQ(allgather_kv_heads_per_chunk(device_config(1, 1 << 20, 8, 8), 8), 1);
  // MQA and two K/V heads: one head a chunk, whatever the tiles.
  EXPECT_EQ(allgather_kv_heads_per_chunk(device_config(1, 1024, 16, 1), 4), 1);
  EXPECT_EQ(allgather_kv_heads_per_chunk(device_config(1, 1024, 2, 2), 4), 1);
  // 32 K/V heads at 4 ranks: 128 tiles a head reach the target at 4 heads, 127 need 8 (4 give
  // 508); a rank's rows one short of 128 tiles still make 128, one past 127 tiles make 128.
  EXPECT_EQ(allgather_kv_heads_per_chunk(device_config(1, 4 * 128 * 128, 32, 32), 4), 4);
  EXPECT_EQ(allgather_kv_heads_per_chunk(device_config(1, 4 * (128 * 128 - 1), 32, 32), 4), 4);
  EXPECT_EQ(allgather_kv_heads_per_chunk(device_config(1, 4 * 128 * 127, 32, 32), 4), 8);
  EXPECT_EQ(allgather_kv_heads_per_chunk(device_config(1, 4 * (128 * 127 + 1), 32, 32), 4), 4);
}

TEST(AllGatherChunk, MatchesTheSearchAndDividesTheKvHeads) {
  for (std::int64_t kv : {1, 2, 3, 4, 5, 6, 8, 12, 16, 32})
    for (std::int64_t group : {1, 2, 4})
      for (std::int64_t batch : {1, 2, 3})
        for (int ranks : {1, 2, 3, 4, 8})
          for (std::int64_t seq : {std::int64_t(1), std::int64_t(127), std::int64_t(128 * 24), std::int64_t(4096 * 24),
                                   std::int64_t(1) << 20}) {
            const AttentionConfig c = device_config(batch, seq * ranks, kv * group, kv);
            const std::int64_t chunk = allgather_kv_heads_per_chunk(c, ranks);
            EXPECT_EQ(kv % chunk, 0) << kv << " " << chunk;
            EXPECT_EQ(chunk, searched(c, ranks))
                << "kv " << kv << " group " << group << " batch " << batch << " ranks " << ranks << " rows " << seq;
            if (kv >= 2) {
              EXPECT_LE(chunk, kv / 2);
            }
          }
}

}  // namespace
}  // namespace rfa::engine
