// SPDX-License-Identifier: BSD-3-Clause
// Backward flash attention on the host (FlashAttention-2 order): one Kokkos team per
// (batch, kv head, range of key tiles). A team owns dK and dV of its key tiles, so they
// accumulate in scratch without synchronization while every query tile of every head of
// the GQA group streams past; dQ rows are shared between teams and are added atomically only
// when the key tiles of one head are split over several teams.
#include <cmath>
#include <limits>
#include <optional>
#include <type_traits>

#include "core/allocation.hpp"
#include "kernels/contiguous_ops.hpp"
#include "kernels/flash_attention.hpp"
#include "kernels/flash_backward_bf16.hpp"
#include "kernels/head_major_copy.hpp"
#include "kernels/league_chunks.hpp"
#include "kernels/micro_gemm.hpp"
#include "kernels/row_copy.hpp"
#include "kernels/scratch_carver.hpp"
#include "kernels/tensor_checks.hpp"
#include "kernels/tile_visibility.hpp"
#include "kernels/tile_work.hpp"

namespace rfa {
namespace kernels {
namespace {

// Query rows per tile (a multiple of kMicroRows). They are the reduction length of the dK and
// dV products, whose accumulators are loaded and stored once per micro-tile: at 48 those two
// products ran at ~80% of the FMA peak, at 96 as fast as the others (perf/RESULTS.md,
// "2026-11-25 — CPU kernels on a Zen 1 VM (AVX2 only): backward tiles retuned, against PyTorch,
// one thread").
constexpr int kTileRows = 96;
// Key rows per tile. Key tiles are the row dimension of the dK/dV products and the column
// dimension of the score tile, so their padded length must divide by 6 and by 8. Every key
// tile re-reads the Q and dO rows and updates the dQ rows of the whole sequence (strided rows:
// latency-bound), so longer key tiles mean fewer such passes: 96 x 192 tiles ran the fp32
// backward ~10% faster than 48 x 96 on a 2-core Zen 1 VM, longer and other shapes no faster
// (the same perf/RESULTS.md section as kTileRows).
constexpr int kTileCols = 192;
static_assert(kTileRows == kHostBackwardTile.q && kTileCols == kHostBackwardTile.k,
              "the tile counts (kernels/tile_work.hpp) follow these tiles");
// Floats between rows of K^T, V^T, P and dS (all kTileCols wide): an odd number of cache lines,
// as the forward's score tile (flash_forward.cpp), so a column strip spreads over all L1 sets.
constexpr int kScorePitch = row_pitch(kTileCols);
static_assert(odd_lines(kScorePitch), "score rows an odd number of 64-byte lines apart");
constexpr int kColPadding = simd::kWideLanes == 16 ? 48 : 24;  // and by 16 where vectors are wide
static_assert(kTileCols % kColPadding == 0, "key tiles hold whole padded column groups");
constexpr float kLog2e = 1.4426950408889634f;

using Exec = Kokkos::DefaultHostExecutionSpace;
using Policy = Kokkos::TeamPolicy<Exec>;
using Member = Policy::member_type;

/// Q and dO of one call in fp32, head by head: [batch][head][query tile][row][row_pitch(d)] (dO's
/// rows row_pitch(dv) apart), padded with zero rows to whole tiles, so a query tile is one contiguous block the
/// products read in place.
struct HeadMajorQD {
  const float* q = nullptr;
  const float* dout = nullptr;
  std::int64_t head_rows = 0;  // rows per (batch, head): n_qtiles * kTileRows
};

std::int64_t query_tiles(const AttentionParams& p) { return (p.seq_q + kTileRows - 1) / kTileRows; }

/// Bytes of a head-major copy of rows `width` floats wide (Q: head_dim, dO: dv).
std::int64_t head_major_bytes(const AttentionParams& p, std::int64_t width) {
  return std::int64_t(sizeof(float)) * p.batch * p.heads * query_tiles(p) * kTileRows * row_pitch(int(width));
}

std::vector<WorkspaceBuffer> head_major_qd_buffers(BackwardWorkspace& ws, const AttentionParams& p) {
  return {{"rfa::head_major_q", head_major_bytes(p, p.head_dim), &ws.q},
          {"rfa::head_major_dout", head_major_bytes(p, p.dv()), &ws.dout}};
}

/// Q and dO converted to fp32 head by head once per call (docs/architecture.md §3): every key
/// tile then reads each query tile's rows in place, one contiguous block asked for beside the
/// products before it, instead of converting rows that bshd storage puts H * d values apart
/// once per key tile. Into two buffers of `ws`, grown when too small.
template <class T>
HeadMajorQD copy_head_major(const AttentionParams& p, const Tensor4<const T>& tq, const Tensor4<const T>& tdo,
                            BackwardWorkspace& ws) {
  grow_workspace(head_major_qd_buffers(ws, p));
  const std::int64_t head_rows = query_tiles(p) * kTileRows;
  float* const qd = reinterpret_cast<float*>(ws.q.data());
  float* const dod = reinterpret_cast<float*>(ws.dout.data());
  copy_rows_head_major<Exec>("rfa::head_major_qd", tq, tdo, qd, dod, head_rows, p.seq_q,
                             [](std::int64_t i) { return i; });
  return {qd, dod, head_rows};
}

template <class T>
struct BackwardTiles {
  AttentionParams p;
  Tensor4<const T> k, v;
  HeadMajorQD qd;
  Tensor3<const float> lse, delta;
  Tensor4<float> dq, dk, dv;
  int d = 0;      // head dim of Q and K
  int dim_v = 0;  // head dim of V and dO
  int group = 1;
  int n_qtiles = 0;
  std::int64_t first_item = 0;  // league rank 0 of this launch (kernels/league_chunks.hpp)
  int n_ktiles = 0;
  int n_chunks = 1;
  bool atomic_dq = false;
  ProgressHook progress;

  struct Scratch {
    float *k_rows, *kt, *vt, *p, *ds, *dq, *dk, *dv, *lse2, *delta;
    std::int64_t *q_pos, *k_pos;
  };

  static Scratch carve(ScratchCarver& c, int d, int dim_v) {
    Scratch s;
    s.k_rows = c.take<float>(std::size_t(kTileCols) * row_pitch(d));
    s.kt = c.take<float>(std::size_t(kScorePitch) * d);
    s.vt = c.take<float>(std::size_t(kScorePitch) * dim_v);
    s.dk = c.take<float>(std::size_t(kTileCols) * row_pitch(d));
    s.dv = c.take<float>(std::size_t(kTileCols) * row_pitch(dim_v));
    s.dq = c.take<float>(std::size_t(kTileRows) * row_pitch(d));
    s.p = c.take<float>(std::size_t(kTileRows) * kScorePitch);
    s.ds = c.take<float>(std::size_t(kTileRows) * kScorePitch);
    s.lse2 = c.take<float>(kTileRows);
    s.delta = c.take<float>(kTileRows);
    s.q_pos = c.take<std::int64_t>(kTileRows);
    s.k_pos = c.take<std::int64_t>(kTileCols);
    return s;
  }

  void operator()(const Member& team) const {
    const std::int64_t item = first_item + team.league_rank();
    const int chunk = int(item % n_chunks);
    const std::int64_t bhk = item / n_chunks;
    const int hk = int(bhk % p.kv_heads);
    const int b = int(bhk / p.kv_heads);
    const int kt_begin = int(std::int64_t(chunk) * n_ktiles / n_chunks);
    const int kt_end = int(std::int64_t(chunk + 1) * n_ktiles / n_chunks);
    Scratch s = carve_team_scratch<BackwardTiles>(team, d, dim_v);
    for (int kt = kt_begin; kt < kt_end; ++kt) key_tile(s, b, hk, kt);
  }

  void key_tile(const Scratch& s, int b, int hk, int kt) const {
    const int ld = row_pitch(d), ldv = row_pitch(dim_v);
    const std::int64_t c0 = std::int64_t(kt) * kTileCols;
    const int cols = int(std::min<std::int64_t>(kTileCols, p.seq_k - c0));
    // A key tile no query sees adds nothing: neither its K/V rows nor its dK/dV rows are touched
    // (a causal block pair hides about half its key tiles; dk/dv may be large and untouched).
    if (classify_tile(p.rule(b), p.q_pos, 0, p.seq_q, p.k_pos, c0, c0 + cols) == TileVisibility::hidden) return;
    const int cols_padded = round_up(cols, kColPadding);
    for (int j = 0; j < cols_padded; ++j) {
      float* krow = s.k_rows + j * ld;
      float* vrow = s.dv;  // staging for V's row before it is transposed (dv is zeroed below)
      if (j < cols) {
        s.k_pos[j] = p.k_pos(c0 + j);
        load_row(&k(b, c0 + j, hk, 0), krow, d);
        load_row(&v(b, c0 + j, hk, 0), vrow, dim_v);
      } else {
        zero_row(krow, d);
        zero_row(vrow, dim_v);
      }
      for (int x = 0; x < d; ++x) s.kt[x * kScorePitch + j] = krow[x];
      for (int x = 0; x < dim_v; ++x) s.vt[x * kScorePitch + j] = vrow[x];
    }
    for (int i = 0; i < cols_padded * ld; ++i) s.dk[i] = 0.0f;
    for (int i = 0; i < cols_padded * ldv; ++i) s.dv[i] = 0.0f;
    // The query tiles of every head of the GQA group that see this key tile, in order; each
    // one's Q and dO rows are asked for beside the previous one's last products.
    QueryTileRef tile = next_visible(b, 0, 0, c0, cols);
    while (tile.g < group) {
      const QueryTileRef next = next_visible(b, tile.g, tile.qt + 1, c0, cols);
      query_tile(s, b, hk, tile, next, c0, cols, cols_padded);
      tile = next;
    }
    for (int j = 0; j < cols; ++j) {
      add_row(s.dk + j * ld, &dk(b, c0 + j, hk, 0), d);
      add_row(s.dv + j * ldv, &dv(b, c0 + j, hk, 0), dim_v);
    }
  }

  /// A query tile: tile qt of head hk * group + g, and how much of the key tile it sees.
  struct QueryTileRef {
    int g, qt;
    TileVisibility vis;
  };

  /// The first query tile from `from` on (in head-major order) with a query of batch entry b
  /// that sees key columns c0 .. c0 + cols (every head of the group has the same mask); g ==
  /// group when there is none.
  QueryTileRef next_visible(int b, int g, int qt, std::int64_t c0, int cols) const {
    const MaskRule rule = p.rule(b);
    for (; g < group; ++g, qt = 0) {
      for (; qt < n_qtiles; ++qt) {
        const std::int64_t r0 = std::int64_t(qt) * kTileRows;
        const std::int64_t r1 = std::min<std::int64_t>(r0 + kTileRows, p.seq_q);
        const TileVisibility vis = classify_tile(rule, p.q_pos, r0, r1, p.k_pos, c0, c0 + cols);
        if (vis != TileVisibility::hidden) return {g, qt, vis};
      }
    }
    return {group, 0, TileVisibility::hidden};
  }

  /// The first row of query tile qt of head h of batch b in a head-major copy of rows `width`
  /// floats wide (Q: d, dO: dv).
  const float* query_rows(const float* copy, int width, int b, int h, int qt) const {
    return copy + ((std::int64_t(b) * p.heads + h) * qd.head_rows + std::int64_t(qt) * kTileRows) * row_pitch(width);
  }
  /// Asks for the rows of query tile qt of a head-major copy over `steps` steps.
  RowPrefetcher prefetch_rows(const float* copy, int width, int b, int h, int qt, int steps) const {
    const int rows = int(std::min<std::int64_t>(kTileRows, p.seq_q - std::int64_t(qt) * kTileRows));
    return RowPrefetcher(query_rows(copy, width, b, h, qt), std::ptrdiff_t(row_pitch(width) * sizeof(float)),
                         round_up(rows, kMicroRows), width * sizeof(float), steps);
  }

  /// One query tile against the key tile in scratch; the rows of `next` (if any) are asked for
  /// by the end.
  void query_tile(const Scratch& s, int b, int hk, QueryTileRef tile, QueryTileRef next, std::int64_t c0, int cols,
                  int cols_padded) const {
    const int h = hk * group + tile.g;
    const int qt = tile.qt;
    const int ld = row_pitch(d), ldv = row_pitch(dim_v);
    const std::int64_t r0 = std::int64_t(qt) * kTileRows;
    const int rows = int(std::min<std::int64_t>(kTileRows, p.seq_q - r0));
    const MaskRule rule = p.rule(b);
    if (progress.poll) progress.poll(progress.context);
    const int rows_padded = round_up(rows, kMicroRows);
    const float* const q_rows = query_rows(qd.q, d, b, h, qt);
    const float* const dout_rows = query_rows(qd.dout, dim_v, b, h, qt);
    const float inf = std::numeric_limits<float>::infinity();
    for (int i = 0; i < rows_padded; ++i) {
      const bool real = i < rows;
      // A padded row (or a row that sees nothing anywhere, lse = -inf) gets P = 0.
      const float l = real ? lse(b, h, r0 + i) : -inf;
      s.lse2[i] = l == -inf ? inf : l * kLog2e;
      s.delta[i] = real ? delta(b, h, r0 + i) : 0.0f;
      if (real) s.q_pos[i] = p.q_pos(r0 + i);
    }

    // In a partial tile, blocks the mask hides whole are not computed (docs/architecture.md §4):
    // their S and dP are written as zeros (P and dS are set to 0 there below), key rows no query
    // of the tile sees add nothing to dK and dV, and query rows that see no key of the tile get
    // dQ rows of zeros.
    const bool partial = tile.vis == TileVisibility::partial;
    std::optional<RangeTileSpans> spans;  // a mask given as ranges, row by row
    if (partial && rule.ranges.on) spans.emplace(rule.ranges, s.q_pos, rows, s.k_pos, cols);
    const RangeTileSpans* const row_spans = spans ? &*spans : nullptr;
    const HiddenBlocks hidden{rule, p.q_pos, p.k_pos, r0, c0, rows, cols, partial, row_spans};
    // Zeros C[i0:i1][j0:j1] of a product whose block `skip` says to leave out; returns skip.
    auto zeroed = [](bool skip, float* c, int ldc, int i0, int i1, int j0, int j1) {
      for (int i = i0; skip && i < i1; ++i) zero_row(c + i * ldc + j0, j1 - j0);
      return skip;
    };
    auto hidden_scores_of = [&](float* c) {
      return [&, c](int q0, int q1, int k0, int k1) {
        return zeroed(hidden(q0, q1, k0, k1), c, kScorePitch, q0, q1, k0, k1);
      };
    };
    auto unseen_keys = [&](int k0, int k1, int, int) { return hidden(0, rows, k0, k1); };
    auto blind_queries = [&](int q0, int q1, int x0, int x1) {
      return zeroed(hidden(q0, q1, 0, cols), s.dq, ld, q0, q1, x0, x1);
    };
    gemm<Update::overwrite>(rows_padded, cols_padded, d, RowMajorA{q_rows, ld}, s.kt, kScorePitch, s.p, kScorePitch,
                            NothingAfterTile{}, hidden_scores_of(s.p));
    gemm<Update::overwrite>(rows_padded, cols_padded, dim_v, RowMajorA{dout_rows, ldv}, s.vt, kScorePitch, s.ds,
                            kScorePitch, NothingAfterTile{}, hidden_scores_of(s.ds));

    // P = exp(scale S - lse), dS = scale * P (dP - D): scale is folded in here so dQ and dK
    // come out of their products already scaled.
    using V = simd::wide;
    const float scale = p.scale();
    const V vc = simd::splat<V>(scale * kLog2e);
    const V vscale = simd::splat<V>(scale);
    // With soft-capped scores t = tanh(scale S / softcap): P = exp(softcap t - lse) and dS is
    // multiplied by the cap's slope 1 - t^2 (simd::tanh's, which keeps its relative precision
    // where t rounds to +-1).
    const bool capped = p.softcap > 0.0f;
    const V vcap = simd::splat<V>(p.softcap * kLog2e);
    const V vinv_cap = simd::splat<V>(capped ? scale / p.softcap : 0.0f);
    for (int i = 0; i < rows_padded; ++i) {
      float* prow = s.p + i * kScorePitch;
      float* dsrow = s.ds + i * kScorePitch;
      const V vl = simd::splat<V>(s.lse2[i]);
      const V vd = simd::splat<V>(s.delta[i]);
      if (capped) {
        for (int j = 0; j < cols_padded; j += simd::kWideLanes) {
          V slope;
          const V t = simd::tanh(simd::load_as<V>(prow + j) * vinv_cap, slope);
          const V pj = simd::exp2_probability(t * vcap - vl);
          simd::store_as(prow + j, pj);
          simd::store_as(dsrow + j, pj * (simd::load_as<V>(dsrow + j) - vd) * slope * vscale);
        }
      } else {
        for (int j = 0; j < cols_padded; j += simd::kWideLanes) {
          const V pj = simd::exp2_probability(simd::load_as<V>(prow + j) * vc - vl);
          simd::store_as(prow + j, pj);
          simd::store_as(dsrow + j, pj * (simd::load_as<V>(dsrow + j) - vd) * vscale);
        }
      }
      for (int j = cols; j < cols_padded; ++j) prow[j] = dsrow[j] = 0.0f;
    }
    if (hidden.partial)
      for_each_hidden<kTileRows, kTileCols>(
          rule, s.q_pos, rows, s.k_pos, cols,
          [&](int i, int j) { s.p[i * kScorePitch + j] = s.ds[i * kScorePitch + j] = 0.0f; }, row_spans);

    // The next tile's dO rows are asked for beside dK += dS^T Q (the last product to read dO
    // came before), its Q rows beside dQ = dS K, together with this tile's dQ rows (added to
    // below).
    const bool more = next.g < group;
    const int next_h = hk * group + next.g;
    gemm<Update::accumulate>(cols_padded, dim_v, rows_padded, TransposedA{s.p, kScorePitch}, dout_rows, ldv, s.dv, ldv,
                             NothingAfterTile{}, unseen_keys);
    RowPrefetcher next_dout, next_q;
    if (more) next_dout = prefetch_rows(qd.dout, dim_v, b, next_h, next.qt, gemm_micro_tiles(cols_padded, d));
    gemm<Update::accumulate>(
        cols_padded, d, rows_padded, TransposedA{s.ds, kScorePitch}, q_rows, ld, s.dk, ld, [&] { next_dout.step(); },
        unseen_keys);
    next_dout.finish();
    if (more) next_q = prefetch_rows(qd.q, d, b, next_h, next.qt, gemm_micro_tiles(rows_padded, d));
    RowPrefetcher dq_lines(&dq(b, r0, h, 0), std::ptrdiff_t(dq.stride(1) * sizeof(float)), rows, d * sizeof(float),
                           gemm_micro_tiles(rows_padded, d));
    gemm<Update::overwrite>(
        rows_padded, d, cols_padded, RowMajorA{s.ds, kScorePitch}, s.k_rows, ld, s.dq, ld,
        [&] {
          next_q.step();
          dq_lines.step();
        },
        blind_queries);
    next_q.finish();
    dq_lines.finish();

    for (int i = 0; i < rows; ++i) {
      float* dst = &dq(b, r0 + i, h, 0);
      const float* src = s.dq + i * ld;
      if (atomic_dq) {
        for (int x = 0; x < d; ++x) Kokkos::atomic_add(dst + x, src[x]);
      } else {
        add_row(src, dst, d);
      }
    }
  }
};

template <class T, class TOut>
struct DeltaRows {
  Tensor4<const T> dout;
  Tensor4<const TOut> out;
  Tensor3<float> delta;
  std::int64_t seq, heads;
  int d;
  void operator()(std::int64_t idx) const {
    const int h = int(idx % heads);
    const std::int64_t i = (idx / heads) % seq;
    const int b = int(idx / (heads * seq));
    float acc = 0.0f;
    for (int x = 0; x < d; ++x) acc += to_float(dout(b, i, h, x)) * to_float(out(b, i, h, x));
    delta(b, h, i) = acc;
  }
};

}  // namespace

template <class T, class TOut>
void compute_delta(const AttentionParams& p, Tensor4<const T> dout, Tensor4<const TOut> out, Tensor3<float> delta) {
  validate(p);
  check_tensor(dout, "dout", p.batch, p.seq_q, p.heads, p.dv());
  check_tensor(out, "out", p.batch, p.seq_q, p.heads, p.dv());
  check_tensor(delta, "delta", p.batch, p.heads, p.seq_q);
  DeltaRows<T, TOut> f{dout, out, delta, p.seq_q, p.heads, int(p.dv())};
  Kokkos::parallel_for("rfa::compute_delta",
                       Kokkos::RangePolicy<Exec, Kokkos::IndexType<std::int64_t>>(0, p.batch * p.seq_q * p.heads), f);
  Exec().fence();
}

template <class T>
void flash_backward_accumulate(const AttentionParams& p, Tensor4<const T> q, Tensor4<const T> k, Tensor4<const T> v,
                               Tensor4<const T> dout, Tensor3<const float> lse, Tensor3<const float> delta,
                               Tensor4<float> dq, Tensor4<float> dk, Tensor4<float> dv, const ProgressHook& progress,
                               BackwardWorkspace* workspace) {
  validate(p);
  check_tensor(q, "q", p.batch, p.seq_q, p.heads, p.head_dim);
  check_tensor(k, "k", p.batch, p.seq_k, p.kv_heads, p.head_dim);
  check_tensor(v, "v", p.batch, p.seq_k, p.kv_heads, p.dv());
  check_tensor(dout, "dout", p.batch, p.seq_q, p.heads, p.dv());
  check_tensor(lse, "lse", p.batch, p.heads, p.seq_q);
  check_tensor(delta, "delta", p.batch, p.heads, p.seq_q);
  check_tensor(dq, "dq", p.batch, p.seq_q, p.heads, p.head_dim);
  check_tensor(dk, "dk", p.batch, p.seq_k, p.kv_heads, p.head_dim);
  check_tensor(dv, "dv", p.batch, p.seq_k, p.kv_heads, p.dv());

  if constexpr (std::is_same<T, bf16_t>::value) {
    if (flash_backward_bf16(p, q, k, v, dout, lse, delta, dq, dk, dv, progress, workspace)) return;
  }

  BackwardTiles<T> f;
  f.p = p;
  f.k = k;
  f.v = v;
  f.lse = lse;
  f.delta = delta;
  f.dq = dq;
  f.dk = dk;
  f.dv = dv;
  if (Exec().concurrency() == 1) f.progress = progress;
  f.d = int(p.head_dim);
  f.dim_v = int(p.dv());
  f.group = int(p.heads / p.kv_heads);
  f.n_qtiles = int(query_tiles(p));
  f.n_ktiles = int((p.seq_k + kTileCols - 1) / kTileCols);
  // Split the key tiles of a head only when (batch x kv heads) cannot keep every thread busy.
  const std::int64_t units = p.batch * p.kv_heads;
  const std::int64_t threads = Exec().concurrency();
  f.n_chunks = p.deterministic ? 1 : key_tile_chunks(units, f.n_ktiles, threads, p.key_tile_splits);
  f.atomic_dq = f.n_chunks > 1;
  BackwardWorkspace own;  // freed at return unless the caller keeps one
  f.qd = copy_head_major(p, q, dout, workspace ? *workspace : own);
  const std::size_t scratch = scratch_bytes<BackwardTiles<T>>(f.d, f.dim_v);
  for_each_league_chunk<Policy>("rfa::flash_backward", units * f.n_chunks, f,
                                [&](Policy& policy) { policy.set_scratch_size(1, Kokkos::PerTeam(scratch)); });
  Exec().fence();
}

std::int64_t flash_backward_workspace_bytes(const AttentionParams& p, rfa_dtype_t dtype) {
  const std::int64_t packed = flash_backward_bf16_workspace_bytes(p, dtype);
  return packed > 0 ? packed : head_major_bytes(p, p.head_dim) + head_major_bytes(p, p.dv());
}

std::vector<WorkspaceBuffer> backward_workspace_buffers(BackwardWorkspace& workspace, const AttentionParams& p,
                                                        rfa_dtype_t dtype) {
  validate(p);
  std::vector<WorkspaceBuffer> packed = flash_backward_bf16_buffers(workspace, p, dtype);
  return packed.empty() ? head_major_qd_buffers(workspace, p) : packed;
}

template <class T>
void flash_backward(const AttentionParams& p, Tensor4<const T> q, Tensor4<const T> k, Tensor4<const T> v,
                    Tensor4<const T> out, Tensor4<const T> dout, Tensor3<const float> lse, Tensor4<T> dq, Tensor4<T> dk,
                    Tensor4<T> dv, BackwardWorkspace* workspace) {
  validate(p);
  check_tensor(dq, "dq", p.batch, p.seq_q, p.heads, p.head_dim);
  check_tensor(dk, "dk", p.batch, p.seq_k, p.kv_heads, p.head_dim);
  check_tensor(dv, "dv", p.batch, p.seq_k, p.kv_heads, p.dv());
  const auto delta_owned = allocate_tensor<Tensor3<float>>("rfa::delta", p.batch, p.heads, p.seq_q);
  const Tensor3<float> delta = delta_owned.view;
  compute_delta<T, T>(p, dout, out, delta);
  if constexpr (std::is_same<T, float>::value) {
    fill_elements(dq, 0.0f);
    fill_elements(dk, 0.0f);
    fill_elements(dv, 0.0f);
    flash_backward_accumulate<T>(p, q, k, v, dout, lse, delta, dq, dk, dv, ProgressHook(), workspace);
  } else {
    const auto dq32_owned = allocate_tensor<Tensor4<float>>("rfa::dq32", p.batch, p.seq_q, p.heads, p.head_dim);
    const auto dk32_owned = allocate_tensor<Tensor4<float>>("rfa::dk32", p.batch, p.seq_k, p.kv_heads, p.head_dim);
    const auto dv32_owned = allocate_tensor<Tensor4<float>>("rfa::dv32", p.batch, p.seq_k, p.kv_heads, p.dv());
    const Tensor4<float> dq32 = dq32_owned.view, dk32 = dk32_owned.view, dv32 = dv32_owned.view;
    for (const Tensor4<float>& g : {dq32, dk32, dv32}) fill_elements(g, 0.0f);  // accumulated into
    flash_backward_accumulate<T>(p, q, k, v, dout, lse, delta, dq32, dk32, dv32, ProgressHook(), workspace);
    narrow<T>(dq32, dq);
    narrow<T>(dk32, dk);
    narrow<T>(dv32, dv);
  }
}

#define RFA_INSTANTIATE_BACKWARD(T)                                                                                 \
  template void compute_delta<T, T>(const AttentionParams&, Tensor4<const T>, Tensor4<const T>, Tensor3<float>);    \
  template void flash_backward_accumulate<T>(const AttentionParams&, Tensor4<const T>, Tensor4<const T>,            \
                                             Tensor4<const T>, Tensor4<const T>, Tensor3<const float>,              \
                                             Tensor3<const float>, Tensor4<float>, Tensor4<float>, Tensor4<float>,  \
                                             const ProgressHook&, BackwardWorkspace*);                              \
  template void flash_backward<T>(const AttentionParams&, Tensor4<const T>, Tensor4<const T>, Tensor4<const T>,     \
                                  Tensor4<const T>, Tensor4<const T>, Tensor3<const float>, Tensor4<T>, Tensor4<T>, \
                                  Tensor4<T>, BackwardWorkspace*);
RFA_INSTANTIATE_BACKWARD(float)
RFA_INSTANTIATE_BACKWARD(bf16_t)
RFA_INSTANTIATE_BACKWARD(fp16_t)
template void compute_delta<bf16_t, float>(const AttentionParams&, Tensor4<const bf16_t>, Tensor4<const float>,
                                           Tensor3<float>);
template void compute_delta<fp16_t, float>(const AttentionParams&, Tensor4<const fp16_t>, Tensor4<const float>,
                                           Tensor3<float>);
#undef RFA_INSTANTIATE_BACKWARD

}  // namespace kernels
}  // namespace rfa
