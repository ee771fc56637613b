// SPDX-License-Identifier: BSD-3-Clause
// Forward flash attention on the host: one Kokkos team (of one thread) per
// (batch, head, query tile; kernels/forward_tile_plan.hpp); the tile's running max, sum and output stay in scratch
// while the key tiles stream past (online softmax, docs/architecture.md §3).
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <type_traits>

#include "core/allocation.hpp"
#include "kernels/flash_attention.hpp"
#include "kernels/flash_forward_bf16.hpp"
#include "kernels/forward_tile_plan.hpp"
#include "kernels/head_major_copy.hpp"
#include "kernels/league_chunks.hpp"
#include "kernels/micro_gemm.hpp"
#include "kernels/row_copy.hpp"
#include "kernels/scratch_carver.hpp"
#include "kernels/seen_key_tiles.hpp"
#include "kernels/tensor_checks.hpp"
#include "kernels/tile_visibility.hpp"
#include "kernels/tile_work.hpp"

namespace rfa {
namespace kernels {
namespace {

constexpr int kTileRows = 192;  // query rows per tile (a multiple of kRowPadding)
constexpr int kTileCols = 96;   // key rows per tile (a multiple of kMicroRows)
static_assert(kTileRows == kHostForwardTile.q && kTileCols == kHostForwardTile.k,
              "the tile counts (kernels/tile_work.hpp) follow these tiles");
// Floats between rows of the score tile and of Q^T (both kTileRows wide): an odd number of
// cache lines, so a column strip of either (a product's B strip, P^T's steps) spreads over all
// L1 sets. At 192 floats (12 lines) a 128-row strip would fall in 16 sets of 8 ways, which the
// other operand's lines evict; the odd pitch makes the forward 1-3% faster (perf/RESULTS.md,
// "2026-11-26 (noon, Zen 3 VM) — one and two threads on Kokkos OpenMP, paired; score tiles one
// cache line longer").
constexpr int kScorePitch = row_pitch(kTileRows);
static_assert(odd_lines(kScorePitch), "score rows an odd number of 64-byte lines apart");
// Query rows are padded to whole micro-tiles (6) and to the softmax's lanes (8, or 16 where the
// build targets AVX-512).
constexpr int kRowPadding = simd::kWideLanes == 16 ? 48 : 24;
static_assert(kTileRows % kRowPadding == 0, "query tiles hold whole padded row groups");
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

using Exec = Kokkos::DefaultHostExecutionSpace;
using Policy = Kokkos::TeamPolicy<Exec>;
using Member = Policy::member_type;

/// K and V of one call in fp32, head by head: [batch][kv head][slot][key][row_pitch(d)] (V's rows
/// row_pitch(dim_v) apart), the key tiles some query tile sees, each in its slot, padded with zero
/// rows to whole tiles.
struct HeadMajorKV {
  const float* k = nullptr;
  const float* v = nullptr;
  const int* slot = nullptr;   // key tile -> slot (-1: no query tile sees it)
  std::int64_t head_rows = 0;  // rows per (batch, kv head): slots * kTileCols
};

/// The product S^T = K Q^T's register hook (micro_gemm.hpp) that keeps each query's max over
/// the key tile: a block's rows are keys, its lanes queries.
struct TileMaxPerQuery {
  float* max;  // [query]
  template <class V, int MR, int NV>
  KOKKOS_INLINE_FUNCTION void operator()(const V (&acc)[MR][NV], int, int q0) const {
    constexpr int L = int(sizeof(V) / sizeof(float));
    for (int v = 0; v < NV; ++v) {
      V m = acc[0][v];
      for (int r = 1; r < MR; ++r) m = simd::max(m, acc[r][v]);
      float* at = max + q0 + L * v;
      simd::store_as(at, simd::max(simd::load_as<V>(at), m));
    }
  }
};

template <class T, class TOut>
struct ForwardTiles {
  AttentionParams p;
  Tensor4<const T> q;
  HeadMajorKV kv;
  Tensor4<TOut> out;
  Tensor3<float> lse;
  int d = 0;                               // head dim of Q and K
  int dim_v = 0;                           // head dim of V and the output
  const ForwardTilePlan* tiles = nullptr;  // each team's batch, head and query rows
  std::int64_t first_item = 0;             // league rank 0 of this launch (kernels/league_chunks.hpp)
  int n_ktiles = 0;
  ProgressHook progress;

  // The score tile is kept transposed, st[key][query]: then S^T = K Q^T takes K rows straight
  // from the tensor (no transposition per key tile; Q^T is packed once per query tile), and
  // the softmax reductions over keys run down columns, lane-parallel over 8 queries.
  struct Scratch {
    float *qt, *row, *st, *o, *m, *l, *tile_max;
    std::int64_t *q_pos, *k_pos;
  };

  static Scratch carve(ScratchCarver& c, int d, int dim_v) {
    Scratch s;
    s.qt = c.take<float>(std::size_t(kScorePitch) * d);
    s.row = c.take<float>(std::size_t(d));
    s.st = c.take<float>(std::size_t(kScorePitch) * kTileCols);
    s.o = c.take<float>(std::size_t(kTileRows) * row_pitch(dim_v));
    s.m = c.take<float>(kTileRows);
    s.l = c.take<float>(kTileRows);
    s.tile_max = c.take<float>(kTileRows);
    s.q_pos = c.take<std::int64_t>(kTileRows);
    s.k_pos = c.take<std::int64_t>(kTileCols);
    return s;
  }

  void operator()(const Member& team) const {
    const ForwardTilePlan::Item work = tiles->item(first_item + team.league_rank());
    const int h = work.h, b = work.b;
    const int hk = int(h / (p.heads / p.kv_heads));
    const std::int64_t r0 = work.rows.begin;
    const int rows = int(work.rows.end - r0);
    // Queries are the rows of O (micro-tiles of 6) and the lanes of the softmax (8).
    const int rows_padded = round_up(rows, kRowPadding);
    const float ninf = -std::numeric_limits<float>::infinity();
    Scratch s = carve_team_scratch<ForwardTiles>(team, d, dim_v);
    const int ld = row_pitch(d), ldv = row_pitch(dim_v);
    const MaskRule rule = p.rule(b);

    // Q^T in the log2 domain: S = (scale * log2 e) Q K^T feeds exp2 directly. With a soft cap
    // Q stays as it is and the cap makes each product x the score c tanh((scale / softcap) x)
    // (c = softcap * log2 e), as the backward forms it: a score past fp32's range, whose capped
    // value is in range, saturates tanh at +-1 rather than overflowing in Q first (inf - inf in
    // the product: NaN). The options keep scale / softcap within fp32 (attention_params.cpp).
    const bool capped = p.softcap > 0.0f;
    const float q_scale = capped ? 1.0f : p.scale() * kLog2e;
    const float into_tanh = capped ? p.scale() / p.softcap : 0.0f;
    for (int i = 0; i < rows_padded; ++i) {
      float* row = s.row;
      if (i < rows) {
        load_row(&q(b, r0 + i, h, 0), row, d, q_scale);
        s.q_pos[i] = p.q_pos(r0 + i);
      } else {
        zero_row(row, d);
      }
      for (int x = 0; x < d; ++x) s.qt[x * kScorePitch + i] = row[x];
    }
    for (int i = 0; i < rows_padded * ldv; ++i) s.o[i] = 0.0f;
    for (int i = 0; i < rows_padded; ++i) {
      s.m[i] = ninf;
      s.l[i] = 0.0f;
    }

    // K and V are read in place from the call's head-major copy (HeadMajorKV): a key tile's
    // rows are one contiguous block, so its lines are asked for a tile ahead, spread over a
    // product that does not read them (a tile's V beside its S^T = K Q^T, the next tile's K
    // beside O += P V). From the bshd tensors themselves (rows H * d values apart) the same
    // prefetches cost ~10% of the forward (perf/RESULTS.md, "2026-11-26 (Zen 3 VM) — where the
    // fp32 forward's time goes outside the products; nothing kept").
    const std::int64_t head_row0 = (std::int64_t(b) * p.kv_heads + hk) * kv.head_rows;
    auto tile_rows = [&](const float* base, int kt, int pitch) {
      return base + (head_row0 + std::int64_t(kv.slot[kt]) * kTileCols) * pitch;
    };
    KeyTileRef tile = next_visible_tile(rule, r0, rows, 0);
    while (tile.kt < n_ktiles) {
      const int kt = tile.kt;
      const std::int64_t c0 = std::int64_t(kt) * kTileCols;
      const int cols = int(std::min<std::int64_t>(kTileCols, p.seq_k - c0));
      const int cols_padded = round_up(cols, kMicroRows);
      if (progress.poll) progress.poll(progress.context);
      const KeyTileRef next = next_visible_tile(rule, r0, rows, kt + 1);
      const float* k_tile = tile_rows(kv.k, kt, ld);
      const float* v_tile = tile_rows(kv.v, kt, ldv);

      // In a partial tile, blocks the mask hides whole are not computed (docs/architecture.md
      // §4): their scores are set to -inf below, and rows that see no key of the tile add
      // nothing to O.
      const bool partial = tile.vis == TileVisibility::partial;
      if (partial)
        for (int j = 0; j < cols; ++j) s.k_pos[j] = p.k_pos(c0 + j);
      std::optional<RangeTileSpans> spans;  // a mask given as ranges, row by row
      if (partial && rule.ranges.on) spans.emplace(rule.ranges, s.q_pos, rows, s.k_pos, cols);
      const RangeTileSpans* const row_spans = spans ? &*spans : nullptr;
      const HiddenBlocks hidden{rule, p.q_pos, p.k_pos, r0, c0, rows, cols, partial, row_spans};
      RowPrefetcher v_lines = tile_lines(v_tile, cols_padded, dim_v, gemm_micro_tiles(cols_padded, rows_padded));
      // Each query's max over the tile is taken from the accumulators as they leave the
      // registers (a few operations per block), which spares the softmax a pass over the score
      // tile where every score counts (no mask inside the tile, no padding keys). Elsewhere
      // hidden or padding scores, not yet -inf, entered it, and the softmax takes the max itself.
      const bool max_from_registers = !hidden.partial && cols == cols_padded;
      for (int i = 0; i < rows_padded; ++i) s.tile_max[i] = ninf;
      gemm<Update::overwrite>(
          cols_padded, rows_padded, d, RowMajorA{k_tile, ld}, s.qt, kScorePitch, s.st, kScorePitch,
          [&] { v_lines.step(); }, [&](int k0, int k1, int q0, int q1) { return hidden(q0, q1, k0, k1); },
          TileMaxPerQuery{s.tile_max});
      v_lines.finish();
      // Soft-capped scores: the cap comes before the mask's -inf (tanh would make it finite);
      // being monotonic, it maps each query's max over the tile to the capped max.
      // In the log2 domain the cap is c = softcap * log2 e: s becomes c tanh(s / c).
      if (capped) {
        const float c = p.softcap * kLog2e;
        simd::cap_rows(s.st, kScorePitch, cols_padded, rows_padded, c, into_tanh);
        if (max_from_registers) simd::cap_rows(s.tile_max, 0, 1, rows_padded, c, into_tanh);
      }

      if (hidden.partial)
        for_each_hidden<kTileRows, kTileCols>(
            rule, s.q_pos, rows, s.k_pos, cols, [&](int i, int j) { s.st[j * kScorePitch + i] = ninf; }, row_spans);
      for (int j = cols; j < cols_padded; ++j)
        for (int i = 0; i < rows_padded; ++i) s.st[j * kScorePitch + i] = ninf;

      online_softmax(s, rows_padded, cols_padded, max_from_registers ? s.tile_max : nullptr);

      RowPrefetcher k_lines;
      if (next.kt < n_ktiles)
        k_lines = tile_lines(tile_rows(kv.k, next.kt, ld), kTileCols, d, gemm_micro_tiles(rows_padded, dim_v));
      gemm<Update::accumulate>(
          rows_padded, dim_v, cols_padded, TransposedA{s.st, kScorePitch}, v_tile, ldv, s.o, ldv,
          [&] { k_lines.step(); }, [&](int q0, int q1, int, int) { return hidden(q0, q1, 0, cols); });
      k_lines.finish();
      tile = next;
    }

    for (int i = 0; i < rows; ++i) {
      const bool seen = s.l[i] > 0.0f;
      const float inv = seen ? 1.0f / s.l[i] : 0.0f;
      TOut* dst = &out(b, r0 + i, h, 0);
      for (int x = 0; x < dim_v; ++x) from_float(s.o[i * ldv + x] * inv, dst[x]);
      lse(b, h, r0 + i) = seen ? (s.m[i] + std::log2(s.l[i])) * kLn2 : ninf;
    }
  }

  /// A key tile, and how much of it the query tile sees.
  struct KeyTileRef {
    int kt;
    TileVisibility vis;
  };

  /// The first key tile from `from` on that some query of rows r0 .. r0 + rows sees;
  /// kt == n_ktiles when there is none.
  KeyTileRef next_visible_tile(const MaskRule& rule, std::int64_t r0, int rows, int from) const {
    for (; from < n_ktiles; ++from) {
      const std::int64_t c0 = std::int64_t(from) * kTileCols;
      const std::int64_t c1 = std::min<std::int64_t>(c0 + kTileCols, p.seq_k);
      const TileVisibility vis = classify_tile(rule, p.q_pos, r0, r0 + rows, p.k_pos, c0, c1);
      // A tile without a slot is hidden from every query of every segment: one a query tile
      // straddling two segments may still call partial (its range spans both) sees nothing.
      if (vis != TileVisibility::hidden && kv.slot[from] >= 0) return {from, vis};
    }
    return {n_ktiles, TileVisibility::hidden};
  }

  /// The lines of `rows` rows of a key tile in the head-major copy (`width` floats a row: d for
  /// K, dim_v for V), asked for over `steps` steps.
  RowPrefetcher tile_lines(const float* first, int rows, int width, int steps) const {
    return RowPrefetcher(first, 0, 1, std::size_t(rows) * row_pitch(width) * sizeof(float), steps);
  }

  /// Turns the score columns into probabilities against the running max, a vector of queries
  /// at a time (16 where the build targets AVX-512), and rescales the running sum and output
  /// rows whose max moved. `tile_max`: each query's max over the tile, when the product took
  /// it (nullptr: taken here).
  void online_softmax(const Scratch& s, int rows_padded, int cols_padded, const float* tile_max) const {
    using V = simd::wide;
    constexpr int L = simd::kWideLanes;
    const int ld = row_pitch(dim_v);
    const V vninf = simd::splat<V>(-std::numeric_limits<float>::infinity());
    for (int i0 = 0; i0 < rows_padded; i0 += L) {
      V vmax = vninf;
      if (tile_max) {
        vmax = simd::load_as<V>(tile_max + i0);
      } else {
        for (int j = 0; j < cols_padded; ++j) vmax = simd::max(vmax, simd::load_as<V>(s.st + j * kScorePitch + i0));
      }
      const V m_old = simd::load_as<V>(s.m + i0);
      const V m_new = simd::max(m_old, vmax);
      // A query that has seen nothing yet keeps m = -inf; subtracting 0 instead keeps its
      // probabilities at exp2(-inf) = 0 rather than NaN. Only -inf: a finite max, however far
      // below zero, is a score the query sees.
      V m_sub;
      for (int lane = 0; lane < L; ++lane)
        m_sub[lane] = m_new[lane] == -std::numeric_limits<float>::infinity() ? 0.0f : m_new[lane];
      V vsum = simd::splat<V>(0.0f);
      for (int j = 0; j < cols_padded; ++j) {
        float* col = s.st + j * kScorePitch + i0;
        const V pj = simd::exp2(simd::load_as<V>(col) - m_sub);
        simd::store_as(col, pj);
        vsum = vsum + pj;
      }
      const V alpha = simd::exp2(m_old - m_sub);
      simd::store_as(s.l + i0, simd::fma(simd::load_as<V>(s.l + i0), alpha, vsum));
      simd::store_as(s.m + i0, m_new);
      for (int lane = 0; lane < L; ++lane) {
        if (alpha[lane] == 1.0f) continue;
        float* o = s.o + (i0 + lane) * ld;
        const simd::f8 va = simd::broadcast(alpha[lane]);
        for (int x = 0; x < dim_v; x += simd::kLanes) simd::store(o + x, simd::load(o + x) * va);
      }
    }
  }
};

std::int64_t key_tiles(const AttentionParams& p) { return key_tile_count(p, kTileCols); }

/// The head-major copy's buffers for a call with these params: a slot for each key tile some
/// query sees, the slot tables, and K and V of batch * kv_heads * slots * kTileCols rows of
/// row_pitch(head_dim) and row_pitch(dim_v) floats.
struct HeadMajorSizes {
  int slots;
  std::int64_t table_bytes, k_bytes, v_bytes;
};
HeadMajorSizes head_major_sizes(const AttentionParams& p, int slots) {
  const std::int64_t rows = p.batch * p.kv_heads * std::int64_t(slots) * kTileCols;
  return {slots, key_tile_slots_bytes(p, kTileCols), std::int64_t(sizeof(float)) * rows * row_pitch(int(p.head_dim)),
          std::int64_t(sizeof(float)) * rows * row_pitch(int(p.dv()))};
}
HeadMajorSizes head_major_sizes(const AttentionParams& p) {
  return head_major_sizes(p, for_each_seen_key_tile(p, kTileCols, [](int, int) {}));
}

constexpr const char* kHeadMajorSlotsLabel = "rfa::head_major_slots";
std::vector<WorkspaceBuffer> head_major_buffers(ForwardWorkspace& ws, const HeadMajorSizes& sizes) {
  return {{kHeadMajorSlotsLabel, sizes.table_bytes, &ws.slots},
          {"rfa::head_major_k", sizes.k_bytes, &ws.k},
          {"rfa::head_major_v", sizes.v_bytes, &ws.v}};
}

/// K and V converted to fp32 head by head, made once per call: every query tile of a head then
/// reads the same copy (docs/architecture.md §3), a key tile costing one contiguous prefetch
/// instead of a conversion of strided rows per query tile. Only the key tiles some query tile
/// sees are copied (a mask may hide most of a long block), each zero-padded to a whole tile.
/// Three buffers of `ws` (head_major_sizes, which flash_forward_workspace_bytes() counts), grown
/// when too small: nothing is allocated here when the caller lent them large enough
/// (forward_workspace_buffers()).
template <class T>
HeadMajorKV copy_head_major(const AttentionParams& p, const Tensor4<const T>& tk, const Tensor4<const T>& tv,
                            ForwardWorkspace& ws) {
  const int n_ktiles = int(key_tiles(p));
  // Key tile -> slot (-1: none), then slot -> key tile; the count of slots sizes K and V.
  const KeyTileSlots slots = fill_key_tile_slots_in(p, kTileCols, kHeadMajorSlotsLabel, ws.slots);
  const int* const slot = slots.table;
  const HeadMajorSizes sizes = head_major_sizes(p, slots.slots);
  grow_workspace(head_major_buffers(ws, sizes));

  const std::int64_t head_rows = std::int64_t(sizes.slots) * kTileCols;
  const int* const tiles = slot + n_ktiles;
  float* const kd = reinterpret_cast<float*>(ws.k.data());
  float* const vd = reinterpret_cast<float*>(ws.v.data());
  copy_rows_head_major<Exec>("rfa::head_major_kv", tk, tv, kd, vd, head_rows, p.seq_k, [=](std::int64_t i) {
    return std::int64_t(tiles[i / kTileCols]) * kTileCols + i % kTileCols;
  });
  return {kd, vd, slot, head_rows};
}

}  // namespace

template <class T, class TOut>
void flash_forward(const AttentionParams& p, Tensor4<const T> q, Tensor4<const T> k, Tensor4<const T> v,
                   Tensor4<TOut> out, Tensor3<float> lse, const ProgressHook& progress, ForwardWorkspace* workspace) {
  validate(p);
  check_tensor(q, "q", p.batch, p.seq_q, p.heads, p.head_dim);
  check_tensor(k, "k", p.batch, p.seq_k, p.kv_heads, p.head_dim);
  check_tensor(v, "v", p.batch, p.seq_k, p.kv_heads, p.dv());
  check_tensor(out, "out", p.batch, p.seq_q, p.heads, p.dv());
  check_tensor(lse, "lse", p.batch, p.heads, p.seq_q);

  if constexpr (std::is_same<T, bf16_t>::value) {
    if (flash_forward_bf16<TOut>(p, q, k, v, out, lse, progress, workspace)) return;
  }

  ForwardTiles<T, TOut> f;
  f.p = p;
  f.q = q;
  f.out = out;
  f.lse = lse;
  if (Exec().concurrency() == 1) f.progress = progress;
  f.d = int(p.head_dim);
  f.dim_v = int(p.dv());
  const ForwardTilePlan tiles(p, kHostForwardTile);
  f.tiles = &tiles;
  f.n_ktiles = int(key_tiles(p));
  ForwardWorkspace own;  // freed at return unless the caller keeps one
  f.kv = copy_head_major(p, k, v, workspace ? *workspace : own);
  const std::int64_t league = tiles.items();
  const std::size_t scratch = scratch_bytes<ForwardTiles<T, TOut>>(f.d, f.dim_v);
  for_each_league_chunk<Policy>("rfa::flash_forward", league, f,
                                [&](Policy& policy) { policy.set_scratch_size(1, Kokkos::PerTeam(scratch)); });
  Exec().fence();
}

std::int64_t flash_forward_workspace_bytes(const AttentionParams& p, rfa_dtype_t dtype) {
  const std::int64_t packed = flash_forward_bf16_workspace_bytes(p, dtype);
  if (packed > 0) return packed;
  const HeadMajorSizes sizes = head_major_sizes(p);
  return sizes.table_bytes + sizes.k_bytes + sizes.v_bytes;
}

std::vector<WorkspaceBuffer> forward_workspace_buffers(ForwardWorkspace& workspace, const AttentionParams& p,
                                                       rfa_dtype_t dtype) {
  validate(p);
  std::vector<WorkspaceBuffer> packed = flash_forward_bf16_buffers(workspace, p, dtype);
  return packed.empty() ? head_major_buffers(workspace, head_major_sizes(p)) : packed;
}

void grow_workspace(const std::vector<WorkspaceBuffer>& buffers) {
  for (const WorkspaceBuffer& b : buffers) grow_bytes<HostSpace>(*b.view, b.label, b.bytes);
}

#define RFA_INSTANTIATE_FORWARD(T, TOut)                                                                             \
  template void flash_forward<T, TOut>(const AttentionParams&, Tensor4<const T>, Tensor4<const T>, Tensor4<const T>, \
                                       Tensor4<TOut>, Tensor3<float>, const ProgressHook&, ForwardWorkspace*);
RFA_INSTANTIATE_FORWARD(float, float)
RFA_INSTANTIATE_FORWARD(bf16_t, bf16_t)
RFA_INSTANTIATE_FORWARD(bf16_t, float)
RFA_INSTANTIATE_FORWARD(fp16_t, fp16_t)
RFA_INSTANTIATE_FORWARD(fp16_t, float)
#undef RFA_INSTANTIATE_FORWARD

}  // namespace kernels
}  // namespace rfa
