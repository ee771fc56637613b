// SPDX-License-Identifier: BSD-3-Clause
// The KV all-gather's K/V heads per chunk (engine/allgather_chunk_rule.hpp): one on the host; on
// a device the fewest that give a chunk's forward kAllGatherDeviceQueryTiles query tiles, a
// divisor of kv_heads, with two chunks left to overlap a gather with a compute, within
// kAllGatherChunkExtraBytes of one head's buffers. Checked against a brute-force search over
// every divisor, on the shapes the device check measures, where the byte bound cuts the chunk
// (many ranks' short slices of a long sequence), and that every chunk it picks has gathered
// views Kokkos can index.
#include <gtest/gtest.h>

#include <cstdint>

#include "core/error.hpp"
#include "core/view_limits.hpp"
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
  c.dtype = RFA_DTYPE_BFLOAT16;
  return c;
}

// The backward's buffers at `chunk` heads, written out term by term from the formula of
// allgather_chunk_rule.hpp (head dims D = DV = c.head_dim, 16-bit elements).
std::int64_t backward_bytes(const AttentionConfig& c, int ranks, std::int64_t chunk) {
  const std::int64_t L = c.seq_total / ranks, g = c.heads / c.kv_heads, D = c.head_dim;
  const std::int64_t kv = c.batch * L * chunk * 2 * D, KV = ranks * kv, w = c.batch * L * chunk * D;
  const std::int64_t qc = c.batch * L * chunk * g * D, r = c.batch * L * chunk * g;
  return 2 * (2 * kv + 3 * KV + 2 * qc) + 4 * (2 * r + c.batch * c.heads * L + qc + KV + ranks * w + w);
}

// The rule restated as a search over the divisors of kv_heads up to kv_heads / 2: the first whose
// chunk reaches the target, else the last within the byte bound; 1 where kv_heads < 2.
std::int64_t searched(const AttentionConfig& c, int ranks) {
  const std::int64_t rows = c.seq_total / ranks, tiles = c.batch * ((rows + 127) / 128) * (c.heads / c.kv_heads);
  std::int64_t last = 1;
  for (std::int64_t d = 1; d <= c.kv_heads / 2; ++d) {
    if (c.kv_heads % d != 0) continue;
    if (backward_bytes(c, ranks, d) - backward_bytes(c, ranks, 1) > kAllGatherChunkExtraBytes) return last;
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
  // 32 K/V heads at 4 ranks: 128 tiles a head reach the target at 4 heads, 127 would need 8 (4
  // give 508), which cost 1.6 GiB more than one head (the bound: 4); a rank's rows one short of
  // 128 tiles still make 128, one past 127 tiles make 128.
  EXPECT_EQ(allgather_kv_heads_per_chunk(device_config(1, 4 * 128 * 128, 32, 32), 4), 4);
  EXPECT_EQ(allgather_kv_heads_per_chunk(device_config(1, 4 * (128 * 128 - 1), 32, 32), 4), 4);
  EXPECT_EQ(allgather_kv_heads_per_chunk(device_config(1, 4 * 128 * 127, 32, 32), 4), 4);
  EXPECT_EQ(allgather_kv_heads_per_chunk(device_config(1, 4 * (128 * 127 + 1), 32, 32), 4), 4);
}

// Many ranks' short slices of a long sequence: one K/V head has few tiles, but each head's
// gathered chunk of the whole sequence costs 0.8 GiB, so the chunk stops at two heads (16 would
// reach the tiles, at 12 GiB).
TEST(AllGatherChunk, TheBytesBoundCutsTheChunk) {
  const AttentionConfig many_ranks = device_config(1, 64 * 4096, 32, 32);
  EXPECT_EQ(backward_bytes(many_ranks, 64, 1), allgather_buffer_bytes(allgather_shape(many_ranks, 64), 1, true));
  EXPECT_EQ(allgather_kv_heads_per_chunk(many_ranks, 64), 2);
  // The same slices over an eighth of the ranks: each head costs about an eighth (110 MB) and has
  // as many tiles; the tiles want 16 heads (1.6 GiB more than one), 8 fit.
  EXPECT_EQ(allgather_kv_heads_per_chunk(device_config(1, 8 * 4096, 32, 32), 8), 8);
  // On the bound's edge: the sequence at which two heads' extra bytes are exactly the bound
  // takes two; one token a rank more takes one.
  AttentionConfig edge = device_config(1, 0, 8, 8);
  const int ranks = 64;
  std::int64_t L = 1;
  while (backward_bytes(device_config(1, ranks * (L + 1), 8, 8), ranks, 2) -
             backward_bytes(device_config(1, ranks * (L + 1), 8, 8), ranks, 1) <=
         kAllGatherChunkExtraBytes)
    ++L;
  edge.seq_total = ranks * L;
  EXPECT_EQ(allgather_kv_heads_per_chunk(edge, ranks), 2) << "rows " << L;
  edge.seq_total = ranks * (L + 1);
  EXPECT_EQ(allgather_kv_heads_per_chunk(edge, ranks), 1) << "rows " << L + 1;
}

TEST(AllGatherChunk, MatchesTheSearchAndDividesTheKvHeads) {
  for (std::int64_t kv : {1, 2, 3, 4, 5, 6, 8, 12, 16, 32})
    for (std::int64_t group : {1, 2, 4})
      for (std::int64_t batch : {1, 2, 3})
        for (int ranks : {1, 2, 3, 4, 8, 64})
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
            // A chunk of several heads never asks for views that one head's would not need.
            if (chunk > 1) {
              EXPECT_NO_THROW(require_view_extents("gathered k", {batch, seq * ranks, chunk, c.head_dim}))
                  << "kv " << kv << " batch " << batch << " ranks " << ranks << " rows " << seq;
            }
          }
}

}  // namespace
}  // namespace rfa::engine
