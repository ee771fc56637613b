// SPDX-License-Identifier: BSD-3-Clause
// Backward flash attention for bf16 on hardware bf16 products (Intel AMX tiles, or AVX512-BF16
// dot products where there are no tiles), in the portable kernel's order (one team per
// (batch, kv head, range of key tiles); dK and dV of its key tiles accumulate in scratch while
// every query tile of the head's group streams past) with all five products in bf16 (operands
// in pair form, kernels/bf16_pairs.hpp):
//
//   S  = Q K^T       A: Q rows            B: K^T in pairs along d      (packed per key tile)
//   dP = dO V^T      A: dO rows           B: V^T in pairs along d      (packed per key tile)
//   dV^T += dO^T P   A: dO^T              B: P in pairs of query rows  (from the softmax)
//   dK^T += Q^T dS   A: Q^T               B: dS in pairs of query rows (from the softmax)
//   dQ = dS K        A: dS rows           B: K in pairs of key rows    (packed per key tile)
//
// dK and dV are accumulated transposed so that P and dS are B operands, which the elementwise
// pass writes in pair form at no cost; the transposes then fall on Q and dO, which are packed
// once per call and head rather than once per key tile (their rows the products read in place).
//
// The products of bf16 inputs (S, dP) are exact either way. P and dS are fp32: on AMX tiles they
// enter their products as bf16 hi + lo, so dQ, dK and dV keep the fp32 accuracy of the portable
// kernel (the second term costs little next to the tiles' speed). On AVX512-BF16 dot products a
// second term would cost 3 of the 5 products again, more than the dot products gain over fp32
// FMAs, so there P and dS enter as one bf16 term each, as in FlashAttention, PyTorch's CPU
// kernel and rfa's CUDA kernels: the sums stay fp32, and each product term carries a relative
// rounding of at most 2^-9 (RFA_HOST_BF16_DOT=0 keeps the portable kernel's fp32 accuracy).
#include "kernels/flash_backward_bf16.hpp"

#include "kernels/bf16_product_engines.hpp"

#if RFA_HOST_BF16_PAIRS
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/league_chunks.hpp"
#include "kernels/micro_gemm.hpp"  // round_up
#include "kernels/scratch_carver.hpp"
#include "kernels/tile_visibility.hpp"
#endif

namespace rfa {
namespace kernels {

#if RFA_HOST_BF16_PAIRS
namespace {

constexpr int kRows = 128;  // query rows per tile
constexpr int kCols = 128;  // keys per tile
// bf16 values between the rows of a pair-form operand (K^T, V^T, P, dS: kCols pairs a row; K:
// d pairs a row, pair_pitch(d)): one 64-byte line more than the row, so that a product's
// column block of B, one or two lines of every row, spreads over every L1 set. At exactly 512
// bytes apart the rows of a block would fall into a quarter of the sets and fill all their ways;
// the longer rows make the backward on dot products 5-8% faster (perf/RESULTS.md, "2026-11-26
// (evening, Zen 4 VM) — bf16 on AVX512-BF16 dot products: all eight cases >= 1.11x PyTorch").
constexpr int pair_pitch(int pairs_per_row) { return 2 * pairs_per_row + 32; }
constexpr int kPairPitch = pair_pitch(kCols);
constexpr float kLog2e = 1.4426950408889634f;

using Exec = Kokkos::DefaultHostExecutionSpace;
using Policy = Kokkos::TeamPolicy<Exec>;
using Member = Policy::member_type;
using V = pairs::f16;

/// Where Q^T and dO^T of (head g of the group, query tile t) lie in the packed workspace:
/// [d][kRows] and [dv][kRows] bf16, padded query columns zero.
/// (U: std::uint16_t to write them, const std::uint16_t to read them.)
template <class U>
struct QueryTransposes {
  U *qt, *doutt;
};
template <class U>
QueryTransposes<U> query_transposes(U* base, int n_qtiles, int g, int t, int d, int dim_v) {
  U* at = base + (std::size_t(g) * n_qtiles + t) * kRows * std::size_t(d + dim_v);
  return {at, at + std::size_t(kRows) * d};
}

/// Packs Q^T and dO^T of every (b, kv head) unit: every query tile of every head of its group,
/// one buffer per unit. (The rows themselves are read from the tensors by the tiles; only a
/// last, partial tile is copied, into team scratch, to pad it with zeros.)
struct PackQuerySide {
  Tensor4<const bf16_t> q, dout;
  std::uint16_t* const* units = nullptr;
  int kv_heads = 1, d = 0, dim_v = 0, group = 1, n_qtiles = 0;
  std::int64_t seq_q = 0;

  void operator()(std::int64_t item) const {
    const int per_unit = group * n_qtiles;
    const std::int64_t unit = item / per_unit;
    const int t = int(item % n_qtiles), g = int(item % per_unit) / n_qtiles;
    const int b = int(unit / kv_heads), hk = int(unit % kv_heads);
    const int h = hk * group + g;
    const std::int64_t r0 = std::int64_t(t) * kRows;
    const int rows = int(std::min<std::int64_t>(kRows, seq_q - r0));
    const QueryTransposes<std::uint16_t> to = query_transposes(units[unit], n_qtiles, g, t, d, dim_v);
    for (int i = 0; i < kRows; ++i) {
      const std::uint16_t* qrow = i < rows ? reinterpret_cast<const std::uint16_t*>(&q(b, r0 + i, h, 0)) : nullptr;
      const std::uint16_t* drow = i < rows ? reinterpret_cast<const std::uint16_t*>(&dout(b, r0 + i, h, 0)) : nullptr;
      for (int x = 0; x < d; ++x) to.qt[std::size_t(x) * kRows + i] = qrow ? qrow[x] : 0;
      for (int x = 0; x < dim_v; ++x) to.doutt[std::size_t(x) * kRows + i] = drow ? drow[x] : 0;
    }
  }
};

template <class Products>
struct Bf16BackwardTiles {
  static constexpr bool kTwoTerms = Products::kTwoTerms;

  AttentionParams p;
  Tensor4<const bf16_t> q, k, v, dout;
  Tensor3<const float> lse, delta;
  Tensor4<float> dq, dk, dv;
  const std::uint16_t* const* unit_packed = nullptr;  // PackQuerySide's buffer of each (b, kv head)
  int d = 0;                                          // head dim of Q and K
  int dim_v = 0;                                      // head dim of V and dO
  int group = 1;
  int n_qtiles = 0;
  int n_ktiles = 0;
  int n_chunks = 1;
  bool atomic_dq = false;
  std::int64_t first_item = 0;
  ProgressHook progress;

  struct Scratch {
    std::uint16_t *kt, *vt, *kp;        // K^T and V^T in pairs along d (dv), K in pairs of key rows
    float *dkt, *dvt;                   // [d][kCols] and [dv][kCols] accumulators
    float *s, *dp;                      // [kRows][kCols]
    std::uint16_t *p_hi, *p_lo;         // P in pairs of query rows, [kRows / 2][kCols][2]
    std::uint16_t *dsp_hi, *dsp_lo;     // dS likewise
    std::uint16_t *ds_hi, *ds_lo;       // dS rows, [kRows][kCols] (the lo parts: two terms only)
    float* dqt;                         // [kRows][d]: this pair's dQ
    std::uint16_t *q_tail, *dout_tail;  // a last, partial query tile's rows, zero-padded (d, dv)
    float *lse2, *dlt;
    std::int64_t *q_pos, *k_pos;
  };

  static Scratch carve(ScratchCarver& c, int d, int dim_v) {
    const std::size_t kd = std::size_t(kCols) * d, kdv = std::size_t(kCols) * dim_v, rc = std::size_t(kRows) * kCols;
    const std::size_t kd_pairs = std::size_t(d / 2) * kPairPitch, kp_pairs = std::size_t(kCols / 2) * pair_pitch(d);
    const std::size_t rc_pairs = std::size_t(kRows / 2) * kPairPitch;
    Scratch s;
    s.kt = c.take<std::uint16_t>(kd_pairs);
    s.vt = c.take<std::uint16_t>(std::size_t(dim_v / 2) * kPairPitch);
    s.kp = c.take<std::uint16_t>(kp_pairs);
    s.dkt = c.take<float>(kd);
    s.dvt = c.take<float>(kdv);
    s.s = c.take<float>(rc);
    s.dp = c.take<float>(rc);
    s.p_hi = c.take<std::uint16_t>(rc_pairs);
    s.p_lo = kTwoTerms ? c.take<std::uint16_t>(rc_pairs) : nullptr;
    s.dsp_hi = c.take<std::uint16_t>(rc_pairs);
    s.dsp_lo = kTwoTerms ? c.take<std::uint16_t>(rc_pairs) : nullptr;
    s.ds_hi = c.take<std::uint16_t>(rc);
    s.ds_lo = kTwoTerms ? c.take<std::uint16_t>(rc) : nullptr;
    s.dqt = c.take<float>(std::size_t(kRows) * d);
    s.q_tail = c.take<std::uint16_t>(std::size_t(kRows) * d);
    s.dout_tail = c.take<std::uint16_t>(std::size_t(kRows) * dim_v);
    s.lse2 = c.take<float>(kRows);
    s.dlt = c.take<float>(kRows);
    s.q_pos = c.take<std::int64_t>(kRows);
    s.k_pos = c.take<std::int64_t>(kCols);
    return s;
  }

  void operator()(const Member& team) const {
    const std::int64_t item = first_item + team.league_rank();
    const int chunk = int(item % n_chunks);
    const std::int64_t unit = item / n_chunks;
    const int hk = int(unit % p.kv_heads), b = int(unit / p.kv_heads);
    const int kt_begin = int(std::int64_t(chunk) * n_ktiles / n_chunks);
    const int kt_end = int(std::int64_t(chunk + 1) * n_ktiles / n_chunks);
    Scratch s = carve_team_scratch<Bf16BackwardTiles>(team, d, dim_v);
    Products::begin();
    for (int kt = kt_begin; kt < kt_end; ++kt) key_tile(s, b, hk, unit_packed[unit], kt);
    Products::end();
  }

  void key_tile(const Scratch& s, int b, int hk, const std::uint16_t* query_packed, int kt) const {
    const std::int64_t c0 = std::int64_t(kt) * kCols;
    const int cols = int(std::min<std::int64_t>(kCols, p.seq_k - c0));
    if (classify_tile(p.rule(b), p.q_pos, 0, p.seq_q, p.k_pos, c0, c0 + cols) == TileVisibility::hidden) return;
    const int cols_padded = round_up(cols, kProductStep);
    std::uint32_t* kt32 = reinterpret_cast<std::uint32_t*>(s.kt);
    std::uint32_t* vt32 = reinterpret_cast<std::uint32_t*>(s.vt);
    for (int j = 0; j < kCols; ++j) {
      const bool real = j < cols;
      const std::uint16_t* krow = real ? reinterpret_cast<const std::uint16_t*>(&k(b, c0 + j, hk, 0)) : nullptr;
      const std::uint16_t* vrow = real ? reinterpret_cast<const std::uint16_t*>(&v(b, c0 + j, hk, 0)) : nullptr;
      if (real) s.k_pos[j] = p.k_pos(c0 + j);
      // K's and V's pairs in one loop as far as both go (all of them with one head dim), then
      // the wider one's rest.
      const int both = std::min(d, dim_v) / 2;
      for (int pp = 0; pp < both; ++pp) {
        std::uint32_t kw = 0, vw = 0;
        if (real) {
          std::memcpy(&kw, krow + 2 * pp, sizeof kw);
          std::memcpy(&vw, vrow + 2 * pp, sizeof vw);
        }
        kt32[std::size_t(pp) * (kPairPitch / 2) + j] = kw;
        vt32[std::size_t(pp) * (kPairPitch / 2) + j] = vw;
      }
      for (int pp = both; pp < d / 2; ++pp) {
        std::uint32_t kw = 0;
        if (real) std::memcpy(&kw, krow + 2 * pp, sizeof kw);
        kt32[std::size_t(pp) * (kPairPitch / 2) + j] = kw;
      }
      for (int pp = both; pp < dim_v / 2; ++pp) {
        std::uint32_t vw = 0;
        if (real) std::memcpy(&vw, vrow + 2 * pp, sizeof vw);
        vt32[std::size_t(pp) * (kPairPitch / 2) + j] = vw;
      }
      std::uint16_t* kp = s.kp + std::size_t(j / 2) * pair_pitch(d) + (j % 2);
      for (int x = 0; x < d; ++x) kp[2 * x] = real ? krow[x] : 0;
    }
    for (std::size_t i = 0; i < std::size_t(kCols) * d; ++i) s.dkt[i] = 0.0f;
    for (std::size_t i = 0; i < std::size_t(kCols) * dim_v; ++i) s.dvt[i] = 0.0f;

    for (int g = 0; g < group; ++g)
      for (int qt = 0; qt < n_qtiles; ++qt) query_tile(s, b, hk, query_packed, g, qt, c0, cols, cols_padded);

    for (int j = 0; j < cols; ++j) {
      float* dkrow = &dk(b, c0 + j, hk, 0);
      float* dvrow = &dv(b, c0 + j, hk, 0);
      const int both = std::min(d, dim_v);
      for (int x = 0; x < both; ++x) {
        dkrow[x] += s.dkt[std::size_t(x) * kCols + j];
        dvrow[x] += s.dvt[std::size_t(x) * kCols + j];
      }
      for (int x = both; x < d; ++x) dkrow[x] += s.dkt[std::size_t(x) * kCols + j];
      for (int x = both; x < dim_v; ++x) dvrow[x] += s.dvt[std::size_t(x) * kCols + j];
    }
  }

  void query_tile(const Scratch& s, int b, int hk, const std::uint16_t* query_packed, int g, int qt, std::int64_t c0,
                  int cols, int cols_padded) const {
    const int h = hk * group + g;
    const std::int64_t r0 = std::int64_t(qt) * kRows;
    const int rows = int(std::min<std::int64_t>(kRows, p.seq_q - r0));
    const MaskRule rule = p.rule(b);
    const TileVisibility vis = classify_tile(rule, p.q_pos, r0, r0 + rows, p.k_pos, c0, c0 + cols);
    if (vis == TileVisibility::hidden) return;
    if (progress.poll) progress.poll(progress.context);
    const int rows_padded = round_up(rows, kProductStep);
    const QueryTransposes<const std::uint16_t> side = query_transposes(query_packed, n_qtiles, g, qt, d, dim_v);
    // Q and dO rows straight from the tensors, but for a partial tile (its padding must be zero).
    const std::uint16_t* q_rows = reinterpret_cast<const std::uint16_t*>(&q(b, r0, h, 0));
    const std::uint16_t* dout_rows = reinterpret_cast<const std::uint16_t*>(&dout(b, r0, h, 0));
    std::size_t q_ld = q.stride(1), dout_ld = dout.stride(1);
    if (rows < rows_padded) {
      for (int i = 0; i < rows_padded; ++i) {
        std::uint16_t* qdst = s.q_tail + std::size_t(i) * d;
        std::uint16_t* ddst = s.dout_tail + std::size_t(i) * dim_v;
        if (i < rows) {
          std::memcpy(qdst, q_rows + i * q_ld, sizeof(std::uint16_t) * d);
          std::memcpy(ddst, dout_rows + i * dout_ld, sizeof(std::uint16_t) * dim_v);
        } else {
          std::memset(qdst, 0, sizeof(std::uint16_t) * d);
          std::memset(ddst, 0, sizeof(std::uint16_t) * dim_v);
        }
      }
      q_rows = s.q_tail;
      dout_rows = s.dout_tail;
      q_ld = std::size_t(d);
      dout_ld = std::size_t(dim_v);
    }
    const float inf = std::numeric_limits<float>::infinity();
    for (int i = 0; i < rows_padded; ++i) {
      const bool real = i < rows;
      // A padded row (or one that sees nothing anywhere, lse = -inf) gets P = 0.
      const float l = real ? lse(b, h, r0 + i) : -inf;
      s.lse2[i] = l == -inf ? inf : l * kLog2e;
      s.dlt[i] = real ? delta(b, h, r0 + i) : 0.0f;
      if (real) s.q_pos[i] = p.q_pos(r0 + i);
    }

    Products::gemm(rows_padded, cols_padded, d, pairs::RowsA{q_rows, nullptr, q_ld},
                   pairs::PairsB{s.kt, nullptr, kPairPitch}, s.s, kCols, false);
    Products::gemm(rows_padded, cols_padded, dim_v, pairs::RowsA{dout_rows, nullptr, dout_ld},
                   pairs::PairsB{s.vt, nullptr, kPairPitch}, s.dp, kCols, false);

    // Masked and padded scores become -inf, so P = 0 there and dS = P (dP - D) = 0 (with a soft
    // cap, whose tanh would make them finite, by a select in probabilities).
    if (vis == TileVisibility::partial)
      for_each_hidden<kRows, kCols>(rule, s.q_pos, rows, s.k_pos, cols,
                                    [&](int i, int j) { s.s[i * kCols + j] = -inf; });
    for (int i = 0; i < rows_padded; ++i)
      for (int j = cols; j < cols_padded; ++j) s.s[i * kCols + j] = -inf;
    if (p.softcap > 0.0f)
      probabilities<true>(s, rows_padded, cols_padded);
    else
      probabilities<false>(s, rows_padded, cols_padded);

    Products::gemm(dim_v, cols_padded, rows_padded, pairs::RowsA{side.doutt, nullptr, kRows},
                   pairs::PairsB{s.p_hi, s.p_lo, kPairPitch}, s.dvt, kCols, true);
    Products::gemm(d, cols_padded, rows_padded, pairs::RowsA{side.qt, nullptr, kRows},
                   pairs::PairsB{s.dsp_hi, s.dsp_lo, kPairPitch}, s.dkt, kCols, true);
    Products::gemm(rows_padded, d, cols_padded, pairs::RowsA{s.ds_hi, s.ds_lo, kCols},
                   pairs::PairsB{s.kp, nullptr, std::size_t(pair_pitch(d))}, s.dqt, std::size_t(d), false);

    for (int i = 0; i < rows; ++i) {
      float* dst = &dq(b, r0 + i, h, 0);
      const float* src = s.dqt + std::size_t(i) * d;
      if (atomic_dq) {
        for (int x = 0; x < d; ++x) Kokkos::atomic_add(dst + x, src[x]);
      } else {
        for (int x = 0; x < d; ++x) dst[x] += src[x];
      }
    }
  }

  /// P = exp(scale S - lse) and dS = scale P (dP - D), two query rows at a time: each written in
  /// bf16 (hi + lo for two terms) in pairs of rows (B of dV^T and dK^T) and dS also as plain
  /// rows (A of dQ). With soft-capped scores t = tanh(scale S / softcap): P = exp(softcap t -
  /// lse), dS multiplied by the cap's slope 1 - t^2 (simd::tanh's), and P = 0 where S is -inf (masked or padded);
  /// the uncapped form has none of it.
  template <bool kCapped>
  void probabilities(const Scratch& s, int rows_padded, int cols_padded) const {
    const float scale = p.scale();
    const V c = simd::splat<V>(scale * kLog2e);
    const V vscale = simd::splat<V>(scale);
    for (int i = 0; i < rows_padded; i += 2) {
      for (int t = 0; t < cols_padded; t += 16) {
        __m256i p_hi[2], p_lo[2], ds_hi[2], ds_lo[2];
        for (int r = 0; r < 2; ++r) {
          const std::size_t at = std::size_t(i + r) * kCols + t;
          const V sr = simd::load_as<V>(s.s + at);
          V pr, ds_scale = vscale;
          if constexpr (kCapped) {
            V slope;
            const V th = simd::tanh(sr * simd::splat<V>(scale / p.softcap), slope);
            const V capped = th * simd::splat<V>(p.softcap * kLog2e) - simd::splat<V>(s.lse2[i + r]);
            pr = simd::select_below(sr, -std::numeric_limits<float>::max(), simd::splat<V>(0.0f),
                                    simd::exp2_probability(capped));
            ds_scale = slope * vscale;
          } else {
            pr = simd::exp2_probability(sr * c - simd::splat<V>(s.lse2[i + r]));
          }
          const V dsr = pr * (simd::load_as<V>(s.dp + at) - simd::splat<V>(s.dlt[i + r])) * ds_scale;
          if (kTwoTerms) {
            pairs::split_bf16(pr, p_hi[r], p_lo[r]);
            pairs::split_bf16(dsr, ds_hi[r], ds_lo[r]);
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(s.ds_lo + at), ds_lo[r]);
          } else {
            p_hi[r] = pairs::round_bf16(pr);
            ds_hi[r] = pairs::round_bf16(dsr);
          }
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(s.ds_hi + at), ds_hi[r]);
        }
        const std::size_t pair_at = std::size_t(i / 2) * kPairPitch + 2 * std::size_t(t);
        _mm512_storeu_si512(s.p_hi + pair_at, pairs::interleave_rows(p_hi[0], p_hi[1]));
        _mm512_storeu_si512(s.dsp_hi + pair_at, pairs::interleave_rows(ds_hi[0], ds_hi[1]));
        if (kTwoTerms) {
          _mm512_storeu_si512(s.p_lo + pair_at, pairs::interleave_rows(p_lo[0], p_lo[1]));
          _mm512_storeu_si512(s.dsp_lo + pair_at, pairs::interleave_rows(ds_lo[0], ds_lo[1]));
        }
      }
    }
  }
};

/// Elements of the packed query side of one (batch, kv head) unit: Q^T and dO^T per query tile
/// of each head of the group.
std::int64_t packed_query_elems(const AttentionParams& p) {
  return (p.heads / p.kv_heads) * ((p.seq_q + kRows - 1) / kRows * kRows) * (p.head_dim + p.dv());
}

/// Every unit's packed query side, one after another (each a multiple of 2 KiB, so every unit
/// starts as aligned as the buffer).
std::vector<WorkspaceBuffer> packed_query_buffers(BackwardWorkspace& ws, const AttentionParams& p) {
  return {{"rfa::bf16_packed_queries",
           std::int64_t(sizeof(std::uint16_t)) * p.batch * p.kv_heads * packed_query_elems(p), &ws.q}};
}

/// Runs the kernel on `Products`; the arguments are checked by the caller.
template <class Products>
void run_backward(const AttentionParams& p, Tensor4<const bf16_t> q, Tensor4<const bf16_t> k, Tensor4<const bf16_t> v,
                  Tensor4<const bf16_t> dout, Tensor3<const float> lse, Tensor3<const float> delta, Tensor4<float> dq,
                  Tensor4<float> dk, Tensor4<float> dv, const ProgressHook& progress, BackwardWorkspace& ws) {
  Bf16BackwardTiles<Products> f;
  f.p = p;
  f.q = q;
  f.dout = dout;
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
  f.n_qtiles = int((p.seq_q + kRows - 1) / kRows);
  f.n_ktiles = int((p.seq_k + kCols - 1) / kCols);
  // Teams over (batch, kv head) units, as in the portable kernel; a unit's key tiles are split
  // over several teams (dq then added atomically) only when the units cannot keep every thread busy.
  const std::int64_t units = p.batch * p.kv_heads;
  const std::int64_t threads = Exec().concurrency();
  f.n_chunks = p.deterministic ? 1 : key_tile_chunks(units, f.n_ktiles, threads, p.key_tile_splits);
  f.atomic_dq = f.n_chunks > 1;
  // Every unit's packed queries one after another in the workspace's buffer.
  grow_workspace(packed_query_buffers(ws, p));
  std::vector<std::uint16_t*> unit_buffers;
  for (std::int64_t u = 0; u < units; ++u)
    unit_buffers.push_back(reinterpret_cast<std::uint16_t*>(ws.q.data()) + u * packed_query_elems(p));
  PackQuerySide pack;
  pack.q = q;
  pack.dout = dout;
  pack.units = unit_buffers.data();
  pack.kv_heads = int(p.kv_heads);
  pack.d = f.d;
  pack.dim_v = f.dim_v;
  pack.group = f.group;
  pack.n_qtiles = f.n_qtiles;
  pack.seq_q = p.seq_q;
  Kokkos::parallel_for("rfa::flash_backward_bf16_pack",
                       Kokkos::RangePolicy<Exec, Kokkos::IndexType<std::int64_t>>(0, units * f.group * f.n_qtiles),
                       pack);
  Exec().fence();
  f.unit_packed = unit_buffers.data();
  const std::size_t scratch = scratch_bytes<Bf16BackwardTiles<Products>>(f.d, f.dim_v);
  for_each_league_chunk<Policy>("rfa::flash_backward_bf16", units * f.n_chunks, f,
                                [&](Policy& policy) { policy.set_scratch_size(1, Kokkos::PerTeam(scratch)); });
  Exec().fence();
}

}  // namespace

#endif

bool flash_backward_bf16(const AttentionParams& p, Tensor4<const bf16_t> q, Tensor4<const bf16_t> k,
                         Tensor4<const bf16_t> v, Tensor4<const bf16_t> dout, Tensor3<const float> lse,
                         Tensor3<const float> delta, Tensor4<float> dq, Tensor4<float> dk, Tensor4<float> dv,
                         const ProgressHook& progress, BackwardWorkspace* workspace) {
#if RFA_HOST_BF16_PAIRS
  BackwardWorkspace own;  // freed at return unless the caller keeps one
  BackwardWorkspace& ws = workspace ? *workspace : own;
  return run_on_bf16_products(p, [&](auto products) {
    run_backward<decltype(products)>(p, q, k, v, dout, lse, delta, dq, dk, dv, progress, ws);
  });
#else
  (void)p, (void)q, (void)k, (void)v, (void)dout, (void)lse, (void)delta, (void)dq, (void)dk, (void)dv, (void)progress,
      (void)workspace;
  return false;
#endif
}

std::int64_t flash_backward_bf16_workspace_bytes(const AttentionParams& p, rfa_dtype_t dtype) {
#if RFA_HOST_BF16_PAIRS
  if (dtype == RFA_DTYPE_BFLOAT16 && host_bf16_products(p) != Bf16Products::none)
    return std::int64_t(sizeof(std::uint16_t)) * p.batch * p.kv_heads * packed_query_elems(p);
#else
  (void)p;
  (void)dtype;
#endif
  return 0;
}

std::vector<WorkspaceBuffer> flash_backward_bf16_buffers(BackwardWorkspace& workspace, const AttentionParams& p,
                                                         rfa_dtype_t dtype) {
#if RFA_HOST_BF16_PAIRS
  if (flash_backward_bf16_workspace_bytes(p, dtype) > 0) return packed_query_buffers(workspace, p);
#else
  (void)workspace, (void)p, (void)dtype;
#endif
  return {};
}

}  // namespace kernels
}  // namespace rfa
