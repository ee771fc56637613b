// SPDX-License-Identifier: BSD-3-Clause
// Forward flash attention on the host: one Kokkos team (of one thread) per
// (batch, head, query tile); the tile's running max, sum and output stay in scratch while
// the key tiles stream past (online softmax, docs/architecture.md §3).
#include <cmath>
#include <limits>
#include <type_traits>

#include "kernels/flash_attention.hpp"
#include "kernels/flash_forward_amx.hpp"
#include "kernels/league_chunks.hpp"
#include "kernels/micro_gemm.hpp"
#include "kernels/row_copy.hpp"
#include "kernels/scratch_carver.hpp"
#include "kernels/tensor_checks.hpp"
#include "kernels/tile_visibility.hpp"

namespace rfa {
namespace kernels {
namespace {

constexpr int kTileRows = 192;  // query rows per tile (a multiple of kRowPadding)
constexpr int kTileCols = 96;  // key rows per tile (a multiple of kMicroRows)
// Query rows are padded to whole micro-tiles (6) and to the softmax's lanes (8, or 16 where the
// build targets AVX-512).
constexpr int kRowPadding = simd::kWideLanes == 16 ? 48 : 24;
static_assert(kTileRows % kRowPadding == 0, "query tiles hold whole padded row groups");
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

using Exec = Kokkos::DefaultHostExecutionSpace;
using Policy = Kokkos::TeamPolicy<Exec>;
using Member = Policy::member_type;

template <class T, class TOut>
struct ForwardTiles {
  AttentionParams p;
  Tensor4<const T> q, k, v;
  Tensor4<TOut> out;
  Tensor3<float> lse;
  int d = 0;
  int n_qtiles = 0;
  std::int64_t first_item = 0;  // league rank 0 of this launch (kernels/league_chunks.hpp)
  int n_ktiles = 0;
  ProgressHook progress;

  // The score tile is kept transposed, st[key][query]: then S^T = K Q^T takes K rows straight
  // from the tensor (no transposition per key tile; Q^T is packed once per query tile), and
  // the softmax reductions over keys run down columns, lane-parallel over 8 queries.
  struct Scratch {
    float *qt, *k, *v, *st, *o, *m, *l;
    std::int64_t *q_pos, *k_pos;
  };

  static Scratch carve(ScratchCarver& c, int d) {
    Scratch s;
    s.qt = c.take<float>(std::size_t(kTileRows) * d);
    s.k = c.take<float>(std::size_t(kTileCols) * row_pitch(d));
    s.v = c.take<float>(std::size_t(kTileCols) * row_pitch(d));
    s.st = c.take<float>(std::size_t(kTileRows) * kTileCols);
    s.o = c.take<float>(std::size_t(kTileRows) * row_pitch(d));
    s.m = c.take<float>(kTileRows);
    s.l = c.take<float>(kTileRows);
    s.q_pos = c.take<std::int64_t>(kTileRows);
    s.k_pos = c.take<std::int64_t>(kTileCols);
    return s;
  }

  void operator()(const Member& team) const {
    const std::int64_t item = first_item + team.league_rank();
    const int qt = int(item % n_qtiles);
    const std::int64_t bh = item / n_qtiles;
    const int h = int(bh % p.heads);
    const int b = int(bh / p.heads);
    const int hk = int(h / (p.heads / p.kv_heads));
    const std::int64_t r0 = std::int64_t(qt) * kTileRows;
    const int rows = int(std::min<std::int64_t>(kTileRows, p.seq_q - r0));
    // Queries are the rows of O (micro-tiles of 6) and the lanes of the softmax (8).
    const int rows_padded = round_up(rows, kRowPadding);
    const float ninf = -std::numeric_limits<float>::infinity();
    Scratch s = carve_team_scratch<ForwardTiles>(team, d);
    const int ld = row_pitch(d);
    const MaskRule rule = p.rule();

    // Q^T in the log2 domain: S = (scale * log2 e) Q K^T feeds exp2 directly.
    const float q_scale = p.scale() * kLog2e;
    for (int i = 0; i < rows_padded; ++i) {
      float* row = s.k;  // staging: the K tile buffer is free until the first key tile
      if (i < rows) {
        load_row(&q(b, r0 + i, h, 0), row, d, q_scale);
        s.q_pos[i] = p.q_pos(r0 + i);
      } else {
        zero_row(row, d);
      }
      for (int x = 0; x < d; ++x) s.qt[x * kTileRows + i] = row[x];
    }
    for (int i = 0; i < rows_padded * ld; ++i) s.o[i] = 0.0f;
    for (int i = 0; i < rows_padded; ++i) {
      s.m[i] = ninf;
      s.l[i] = 0.0f;
    }

    // K/V rows are converted (and zero-padded to whole micro-tiles) into contiguous scratch
    // even for fp32: the tensor's row stride (kv_heads * d floats) is often a multiple of
    // 4 KiB / 8, which maps a 16-column strip of V onto a few L1 sets and thrashes them. Each
    // conversion runs beside a product that leaves its buffer alone (row_copy.hpp): a tile's V
    // beside its S^T = K Q^T, the next tile's K beside this one's O += P V.
    KeyTileRef tile = next_visible_tile(r0, rows, 0);
    if (tile.kt < n_ktiles) key_rows(k, b, hk, tile.kt, s.k, 1).finish();
    while (tile.kt < n_ktiles) {
      const int kt = tile.kt;
      const std::int64_t c0 = std::int64_t(kt) * kTileCols;
      const int cols = int(std::min<std::int64_t>(kTileCols, p.seq_k - c0));
      const int cols_padded = round_up(cols, kMicroRows);
      if (progress.poll) progress.poll(progress.context);
      const KeyTileRef next = next_visible_tile(r0, rows, kt + 1);

      // In a partial tile, blocks the mask hides whole are not computed (docs/architecture.md
      // §4): their scores are set to -inf below, and rows that see no key of the tile add
      // nothing to O.
      const HiddenBlocks hidden{rule, p.q_pos, p.k_pos, r0, c0, rows, cols, tile.vis == TileVisibility::partial};
      SpreadRowLoad<T> v_rows = key_rows(v, b, hk, kt, s.v, gemm_micro_tiles(cols_padded, rows_padded));
      gemm<Update::overwrite>(cols_padded, rows_padded, d, RowMajorA{s.k, ld}, s.qt, kTileRows, s.st, kTileRows,
                              [&] { v_rows.step(); },
                              [&](int k0, int k1, int q0, int q1) { return hidden(q0, q1, k0, k1); });
      v_rows.finish();

      if (hidden.partial) {
        for (int j = 0; j < cols; ++j) s.k_pos[j] = p.k_pos(c0 + j);
        for_each_hidden<kTileRows, kTileCols>(rule, s.q_pos, rows, s.k_pos, cols,
                                              [&](int i, int j) { s.st[j * kTileRows + i] = ninf; });
      }
      for (int j = cols; j < cols_padded; ++j)
        for (int i = 0; i < rows_padded; ++i) s.st[j * kTileRows + i] = ninf;

      online_softmax(s, rows_padded, cols_padded);

      SpreadRowLoad<T> k_rows;
      if (next.kt < n_ktiles) k_rows = key_rows(k, b, hk, next.kt, s.k, gemm_micro_tiles(rows_padded, d));
      gemm<Update::accumulate>(rows_padded, d, cols_padded, TransposedA{s.st, kTileRows}, s.v, ld, s.o, ld,
                               [&] { k_rows.step(); },
                               [&](int q0, int q1, int, int) { return hidden(q0, q1, 0, cols); });
      k_rows.finish();
      tile = next;
    }

    for (int i = 0; i < rows; ++i) {
      const bool seen = s.l[i] > 0.0f;
      const float inv = seen ? 1.0f / s.l[i] : 0.0f;
      TOut* dst = &out(b, r0 + i, h, 0);
      for (int x = 0; x < d; ++x) from_float(s.o[i * ld + x] * inv, dst[x]);
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
  KeyTileRef next_visible_tile(std::int64_t r0, int rows, int from) const {
    for (; from < n_ktiles; ++from) {
      const std::int64_t c0 = std::int64_t(from) * kTileCols;
      const std::int64_t c1 = std::min<std::int64_t>(c0 + kTileCols, p.seq_k);
      const TileVisibility vis = classify_tile(p.rule(), p.q_pos, r0, r0 + rows, p.k_pos, c0, c1);
      if (vis != TileVisibility::hidden) return {from, vis};
    }
    return {n_ktiles, TileVisibility::hidden};
  }

  /// The rows of key tile kt of `t` (K or V) of batch b and key head hk, converted into dst over
  /// `steps` steps.
  SpreadRowLoad<T> key_rows(const Tensor4<const T>& t, int b, int hk, int kt, float* dst, int steps) const {
    const std::int64_t c0 = std::int64_t(kt) * kTileCols;
    const int cols = int(std::min<std::int64_t>(kTileCols, p.seq_k - c0));
    return SpreadRowLoad<T>(&t(b, c0, hk, 0), std::ptrdiff_t(t.stride_1()), cols, round_up(cols, kMicroRows), d,
                            dst, row_pitch(d), steps);
  }

  /// Turns the score columns into probabilities against the running max, a vector of queries
  /// at a time (16 where the build targets AVX-512), and rescales the running sum and output
  /// rows whose max moved.
  void online_softmax(const Scratch& s, int rows_padded, int cols_padded) const {
    using V = simd::wide;
    constexpr int L = simd::kWideLanes;
    const int ld = row_pitch(d);
    const V vninf = simd::splat<V>(-std::numeric_limits<float>::infinity());
    for (int i0 = 0; i0 < rows_padded; i0 += L) {
      V vmax = vninf;
      for (int j = 0; j < cols_padded; ++j) vmax = simd::max(vmax, simd::load_as<V>(s.st + j * kTileRows + i0));
      const V m_old = simd::load_as<V>(s.m + i0);
      const V m_new = simd::max(m_old, vmax);
      // A query that has seen nothing yet keeps m = -inf; subtracting 0 instead keeps its
      // probabilities at exp2(-inf) = 0 rather than NaN.
      V m_sub;
      for (int lane = 0; lane < L; ++lane) m_sub[lane] = m_new[lane] < -3.0e38f ? 0.0f : m_new[lane];
      V vsum = simd::splat<V>(0.0f);
      for (int j = 0; j < cols_padded; ++j) {
        float* col = s.st + j * kTileRows + i0;
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
        for (int x = 0; x < d; x += simd::kLanes) simd::store(o + x, simd::load(o + x) * va);
      }
    }
  }
};

}  // namespace

template <class T, class TOut>
void flash_forward(const AttentionParams& p, Tensor4<const T> q, Tensor4<const T> k, Tensor4<const T> v,
                   Tensor4<TOut> out, Tensor3<float> lse, const ProgressHook& progress) {
  validate(p);
  check_tensor(q, "q", p.batch, p.seq_q, p.heads, p.head_dim);
  check_tensor(k, "k", p.batch, p.seq_k, p.kv_heads, p.head_dim);
  check_tensor(v, "v", p.batch, p.seq_k, p.kv_heads, p.head_dim);
  check_tensor(out, "out", p.batch, p.seq_q, p.heads, p.head_dim);
  check_tensor(lse, "lse", p.batch, p.heads, p.seq_q);

  if constexpr (std::is_same<T, bf16_t>::value) {
    if (flash_forward_amx<TOut>(p, q, k, v, out, lse, progress)) return;
  }

  ForwardTiles<T, TOut> f;
  f.p = p;
  f.q = q;
  f.k = k;
  f.v = v;
  f.out = out;
  f.lse = lse;
  if (Exec().concurrency() == 1) f.progress = progress;
  f.d = int(p.head_dim);
  f.n_qtiles = int((p.seq_q + kTileRows - 1) / kTileRows);
  f.n_ktiles = int((p.seq_k + kTileCols - 1) / kTileCols);
  const std::int64_t league = p.batch * p.heads * f.n_qtiles;
  const std::size_t scratch = scratch_bytes<ForwardTiles<T, TOut>>(f.d);
  for_each_league_chunk<Policy>("rfa::flash_forward", league, f,
                                [&](Policy& policy) { policy.set_scratch_size(1, Kokkos::PerTeam(scratch)); });
  Exec().fence();
}

#define RFA_INSTANTIATE_FORWARD(T, TOut)                                                          \
  template void flash_forward<T, TOut>(const AttentionParams&, Tensor4<const T>, Tensor4<const T>, \
                                       Tensor4<const T>, Tensor4<TOut>, Tensor3<float>, const ProgressHook&);
RFA_INSTANTIATE_FORWARD(float, float)
RFA_INSTANTIATE_FORWARD(bf16_t, bf16_t)
RFA_INSTANTIATE_FORWARD(bf16_t, float)
RFA_INSTANTIATE_FORWARD(fp16_t, fp16_t)
RFA_INSTANTIATE_FORWARD(fp16_t, float)
#undef RFA_INSTANTIATE_FORWARD

}  // namespace kernels
}  // namespace rfa
