// SPDX-License-Identifier: BSD-3-Clause
// The KV all-gather's buffers per rank and its device chunk rule, over plain integers: the one
// statement that the engine (allgather_attention.cpp, allgather_chunk.cpp) and the GPU benchmark
// that measures the rule (perf/cuda/ring_step_bench.cu, which links no engine) both include.
//
// On a GPU a chunk's forward launches one CTA per 128 query rows and query head of the chunk, so
// one K/V head of a short local slice leaves most of the device idle (B=1, S=32768, 16 heads,
// P = 4: 64 CTAs on an H100's 132 SMs). There the chunk is the fewest K/V heads, dividing
// kv_heads, whose forward has kAllGatherDeviceQueryTiles query tiles, with two chunks left where
// there are two heads or more (the gather of the next one is in flight while one computes), and
// never more heads than keep the buffers within kAllGatherChunkExtraBytes of one head's: the
// gathered K/V grow with the whole sequence, so the short slices that want more heads are those
// of many ranks, where a chunk of many heads would cost gigabytes (S = 256K over 64 ranks, 32
// heads: 0.8 GiB for one head, 12 GiB for 16). That bound also keeps a chunk's gathered views
// within what Kokkos indexes (allgather_chunk_test checks it).
#pragma once

#include <algorithm>
#include <cstdint>

namespace rfa {
namespace engine {

/// The all-gather's problem on one rank: batch, query and K/V heads, the rank's rows, the ranks,
/// the head dims of Q/K and of V/out/dO, and the bytes of one element.
struct AllGatherShape {
  std::int64_t batch, heads, kv_heads, local_seq, ranks, head_dim, value_dim, element_bytes;
};

/// The bytes of the all-gather's buffers on one rank with `chunk` K/V heads a chunk, the kernels'
/// own workspace not counted (E = element bytes, g = heads / kv_heads, D and DV the head dims,
/// kv = B*L*c*(D + DV) one local chunk of K and V, KV = P*kv the gathered chunk,
/// w = B*L*c*max(D, DV) one local chunk of the wider, qc = B*L*c*g*D and oc = B*L*c*g*DV the
/// chunk's queries and outputs, r = B*L*c*g its rows):
///   forward:  E*(2kv send + 2KV gathered + KV placed + qc Q + oc out chunk) + 4*r lse chunk
///   backward: E*(2kv + 2KV + KV + qc Q + oc dO chunk) + 4*(2r lse/D chunk + B*H*L D
///             + qc dQ chunk + KV dK/dV + P*w reduce-scatter input + w its output)
constexpr std::int64_t allgather_buffer_bytes(const AllGatherShape& s, std::int64_t chunk, bool backward) {
  const std::int64_t E = s.element_bytes, P = s.ranks, L = s.local_seq;
  const std::int64_t qh = chunk * (s.heads / s.kv_heads);
  const std::int64_t kv = s.batch * L * chunk * (s.head_dim + s.value_dim), KV = P * kv;
  const std::int64_t w = s.batch * L * chunk * std::max(s.head_dim, s.value_dim);
  const std::int64_t qc = s.batch * L * qh * s.head_dim, oc = s.batch * L * qh * s.value_dim;
  const std::int64_t r = s.batch * L * qh;
  const std::int64_t common = E * (2 * kv + 2 * KV + KV + qc + oc);
  if (!backward) return common + 4 * r;
  return common + 4 * (2 * r + s.batch * s.heads * L + qc + KV + P * w + w);
}

/// Query tiles (128 rows of one query head) a device chunk's forward aims for: four waves of
/// one CTA on each SM of a 132-SM GPU, less the last wave's rounding.
constexpr std::int64_t kAllGatherDeviceQueryTiles = 512;

/// The most bytes a device chunk's buffers (the backward's, the larger) may take beyond those of
/// a chunk of one K/V head.
constexpr std::int64_t kAllGatherChunkExtraBytes = std::int64_t(1) << 30;

/// The query rows of one CTA of every CUDA forward (sm80 and Hopper).
constexpr std::int64_t kCudaForwardTileRows = 128;

/// The K/V heads per chunk on a device, as the file comment says: a divisor of kv_heads.
constexpr std::int64_t device_kv_heads_per_chunk(const AllGatherShape& s) {
  if (s.kv_heads <= 1) return 1;
  const std::int64_t group = std::max<std::int64_t>(1, s.heads / s.kv_heads);
  const std::int64_t tiles_per_kv_head =
      std::max<std::int64_t>(1, s.batch * ((s.local_seq + kCudaForwardTileRows - 1) / kCudaForwardTileRows) * group);
  const std::int64_t one_head = allgather_buffer_bytes(s, 1, true);
  std::int64_t chunk = 1;
  for (std::int64_t d = 2; d <= s.kv_heads / 2 && tiles_per_kv_head * chunk < kAllGatherDeviceQueryTiles; ++d) {
    if (s.kv_heads % d != 0) continue;
    if (allgather_buffer_bytes(s, d, true) - one_head > kAllGatherChunkExtraBytes) break;  // larger ones cost more
    chunk = d;
  }
  return chunk;
}

}  // namespace engine
}  // namespace rfa
