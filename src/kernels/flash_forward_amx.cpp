// SPDX-License-Identifier: BSD-3-Clause
// Forward flash attention for bf16 on AMX tiles. The tile unit multiplies 16 x 32 bf16 by
// 32 x 16 bf16 into 16 x 16 fp32 (tdpbf16ps) at several times the fp32 FMA rate, with the same
// exact bf16 products and fp32 sums the portable kernel gets by widening. P is fp32 and the
// tiles take bf16. For fp32 partials (what the ring merges) P enters P V as two bf16 terms,
// hi + lo (16 significant bits): rounding P to bf16 alone, as GPU kernels do, would put ~1e-3
// relative error into them, where the contract is fp32 accuracy (DESIGN.md §7); the second
// term costs one more tile product per P tile (about 15% of the kernel). A bf16 output takes
// P rounded once: its own rounding to bf16 is the larger error. Row sums, and so lse, are
// always those of the unrounded P.
//
// Layout per team (one query tile of one head): scores S = Q K^T are query-major, so Q rows
// are the A operand as they are, K^T goes to B in the tiles' pair-interleaved (VNNI) form (a
// 32-bit transpose of the K tile), the softmax runs along rows, P (bf16 hi + lo, query-major) is the A
// operand of O += P V, and V goes to B with pairs of key rows interleaved.
#include "kernels/flash_forward_amx.hpp"

#include <cstdlib>
#include <cstring>
#include <type_traits>

#if RFA_HOST_AMX
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cmath>
#include <limits>

#include "kernels/league_chunks.hpp"
#include "kernels/scratch_carver.hpp"
#include "kernels/simd.hpp"
#include "kernels/tile_visibility.hpp"
#endif

namespace rfa {
namespace kernels {

#if RFA_HOST_AMX
namespace {

constexpr int kRows = 192;   // query rows per tile (12 blocks of 16)
constexpr int kCols = 128;   // keys per tile (8 blocks of 16; 4 chunks of 32 for P V)
constexpr int kBlock = 16;   // rows and columns of a C tile
constexpr int kChunk = 32;   // bf16 values along the reduction per A tile row
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

using Exec = Kokkos::DefaultHostExecutionSpace;
using Policy = Kokkos::TeamPolicy<Exec>;
using Member = Policy::member_type;
using V = simd::f16;

/// Linux hands out the AMX register state (8 KiB per thread) only on request.
bool tile_state_granted() {
  static const bool granted = [] {
    constexpr long kArchReqXcompPerm = 0x1023;
    constexpr long kXfeatureXtiledata = 18;
    return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
  }();
  return granted;
}

/// Every tile is 16 rows of 64 bytes: C 16 x 16 fp32, A 16 x 32 bf16, B 16 pairs x 16 columns.
struct alignas(64) TileConfig {
  std::uint8_t palette = 1;
  std::uint8_t start_row = 0;
  std::uint8_t reserved[14] = {};
  std::uint16_t colsb[16] = {};
  std::uint8_t rows[16] = {};
};

void configure_tiles() {
  TileConfig config;
  for (int t = 0; t < 8; ++t) {
    config.colsb[t] = 64;
    config.rows[t] = 16;
  }
  _tile_loadconfig(&config);
}

/// Lane 0 of a tree reduction of the 16 lanes (four shuffles; per-row loops of 16 dependent
/// scalar steps cost more than the row's exponentials).
template <class Op>
float reduce16(V v, Op op) {
  v = op(v, __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7));
  v = op(v, __builtin_shufflevector(v, v, 4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11));
  v = op(v, __builtin_shufflevector(v, v, 2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13));
  v = op(v, __builtin_shufflevector(v, v, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14));
  return v[0];
}
float reduce_max(V v) {
  return reduce16(v, [](V a, V b) { return simd::max(a, b); });
}
float reduce_add(V v) {
  return reduce16(v, [](V a, V b) { return a + b; });
}

/// x as hi + lo, two bf16 values (each rounded to nearest even) that together carry 16
/// significant bits: |x - hi - lo| <= 2^-17 |x|, as close as fp32 sums need.
/// x rounded to bf16 (nearest even) at hi.
void round_bf16(V x, std::uint16_t* hi) {
  __m512 xs;
  std::memcpy(&xs, &x, sizeof xs);
  const __m256bh h = _mm512_cvtneps_pbh(xs);
  std::memcpy(hi, &h, sizeof h);
}

void split_bf16(V x, std::uint16_t* hi, std::uint16_t* lo) {
  __m512 xs;
  std::memcpy(&xs, &x, sizeof xs);
  const __m256bh h = _mm512_cvtneps_pbh(xs);
  __m256i hbits;
  std::memcpy(&hbits, &h, sizeof hbits);
  // The masked forms: the unmasked ones start from an "undefined" vector GCC 12 warns about.
  const __m512i widened = _mm512_maskz_slli_epi32(0xffff, _mm512_maskz_cvtepu16_epi32(0xffff, hbits), 16);
  const __m256bh l = _mm512_cvtneps_pbh(_mm512_sub_ps(xs, _mm512_castsi512_ps(widened)));
  std::memcpy(hi, &h, sizeof h);
  std::memcpy(lo, &l, sizeof l);
}

/// K and V of one (batch, kv head), tile by tile, in the forms the tiles read: K^T in pairs
/// along d, kt[p][j] (32 bits) = K[j][2p .. 2p+1], and V with pairs of key rows interleaved,
/// vp[j / 2][x][j % 2] = V[j][x]; kCols * d values per tile for each. Rows past the last key
/// are zero, so padded scores are finite before the mask and 0 * V stays 0. Packed once per
/// call and head, not once per query tile: every query tile of the head's group reads them.
struct PackKeyTiles {
  Tensor4<const bf16_t> k, v;
  Kokkos::View<std::uint16_t*, Kokkos::HostSpace> kt, vp;
  int b = 0, hk = 0, d = 0;
  std::int64_t seq_k = 0;

  void operator()(int tile) const {
    typedef std::uint16_t u16x16 __attribute__((vector_size(32)));
    typedef std::uint32_t u32x16 __attribute__((vector_size(64)));
    const std::int64_t c0 = std::int64_t(tile) * kCols;
    const int cols = int(std::min<std::int64_t>(kCols, seq_k - c0));
    const int pairs = d / 2;
    std::uint32_t* kt32 = reinterpret_cast<std::uint32_t*>(kt.data() + std::size_t(tile) * kCols * d);
    std::uint16_t* vtile = vp.data() + std::size_t(tile) * kCols * d;
    for (int j = 0; j < kCols; ++j) {
      if (j < cols) {
        const std::uint16_t* krow = reinterpret_cast<const std::uint16_t*>(&k(b, c0 + j, hk, 0));
        for (int pp = 0; pp < pairs; ++pp) {
          std::uint32_t word;
          std::memcpy(&word, krow + 2 * pp, sizeof word);
          kt32[std::size_t(pp) * kCols + j] = word;
        }
      } else {
        for (int pp = 0; pp < pairs; ++pp) kt32[std::size_t(pp) * kCols + j] = 0;
      }
    }
    const u16x16 zero = {};
    for (int j = 0; j < kCols; j += 2) {
      const std::uint16_t* even = j < cols ? reinterpret_cast<const std::uint16_t*>(&v(b, c0 + j, hk, 0)) : nullptr;
      const std::uint16_t* odd = j + 1 < cols ? reinterpret_cast<const std::uint16_t*>(&v(b, c0 + j + 1, hk, 0)) : nullptr;
      std::uint16_t* dst = vtile + std::size_t(j / 2) * 2 * d;
      for (int x = 0; x < d; x += 16) {
        u16x16 a = zero, c = zero;
        if (even) std::memcpy(&a, even + x, sizeof a);
        if (odd) std::memcpy(&c, odd + x, sizeof c);
        const u32x16 w = __builtin_convertvector(a, u32x16) | (__builtin_convertvector(c, u32x16) << 16);
        std::memcpy(dst + 2 * x, &w, sizeof w);
      }
    }
  }
};

template <class TOut>
struct AmxForwardTiles {
  // fp32 partials (the ring's) keep fp32 accuracy: P enters P V as hi + lo. A bf16 output is
  // rounded to 8 bits in the end, a larger error than that of P in bf16 alone (averaged over
  // the keys), so there P V is one product per tile, as in GPU kernels.
  static constexpr bool kSplitP = std::is_same<TOut, float>::value;

  AttentionParams p;
  Tensor4<const bf16_t> q, k, v;
  Tensor4<TOut> out;
  Tensor3<float> lse;
  const std::uint16_t* kt_packed = nullptr;  // PackKeyTiles of (b, hk)
  const std::uint16_t* vp_packed = nullptr;
  int b = 0, hk = 0;  // the batch and kv head of this launch
  int d = 0;
  int group = 1;
  int n_qtiles = 0;
  int n_ktiles = 0;
  std::int64_t first_item = 0;
  ProgressHook progress;

  struct Scratch {
    std::uint16_t *q;   // [kRows][d]: Q rows as they are (bf16 bits)
    std::uint16_t *pb;  // [kRows][kCols]: P rounded to bf16
    std::uint16_t *pl;  // [kRows][kCols]: P - pb rounded to bf16 (P V = pb V + pl V to ~2^-17)
    float *s;           // [kRows][kCols]: scores
    float *o;           // [kRows][row_pitch(d)]: output accumulator
    float *m, *l;
    std::int64_t *q_pos, *k_pos;
  };

  static int row_pitch(int d) { return d + 16; }

  static Scratch carve(ScratchCarver& c, int d) {
    Scratch s;
    s.q = c.take<std::uint16_t>(std::size_t(kRows) * d);
    s.pb = c.take<std::uint16_t>(std::size_t(kRows) * kCols);
    s.pl = c.take<std::uint16_t>(std::size_t(kRows) * kCols);
    s.s = c.take<float>(std::size_t(kRows) * kCols);
    s.o = c.take<float>(std::size_t(kRows) * row_pitch(d));
    s.m = c.take<float>(kRows);
    s.l = c.take<float>(kRows);
    s.q_pos = c.take<std::int64_t>(kRows);
    s.k_pos = c.take<std::int64_t>(kCols);
    return s;
  }

  void operator()(const Member& team) const {
    const std::int64_t item = first_item + team.league_rank();
    const int qt = int(item % n_qtiles);
    const int h = hk * group + int(item / n_qtiles);
    const std::int64_t r0 = std::int64_t(qt) * kRows;
    const int rows = int(std::min<std::int64_t>(kRows, p.seq_q - r0));
    const int rows_padded = (rows + 2 * kBlock - 1) / (2 * kBlock) * (2 * kBlock);  // pairs of A tiles
    const int ld = row_pitch(d);
    const float ninf = -std::numeric_limits<float>::infinity();
    Scratch s = carve_team_scratch<AmxForwardTiles>(team, d);
    const MaskRule rule = p.rule();
    configure_tiles();  // per team: the tile configuration belongs to the thread

    for (int i = 0; i < rows_padded; ++i) {
      std::uint16_t* row = s.q + std::size_t(i) * d;
      if (i < rows) {
        std::memcpy(row, &q(b, r0 + i, h, 0), sizeof(std::uint16_t) * d);
        s.q_pos[i] = p.q_pos(r0 + i);
      } else {
        std::memset(row, 0, sizeof(std::uint16_t) * d);
      }
    }
    for (int i = 0; i < rows_padded * ld; ++i) s.o[i] = 0.0f;
    for (int i = 0; i < rows_padded; ++i) {
      s.m[i] = ninf;
      s.l[i] = 0.0f;
    }
    // Scores in the log2 domain: exp2(c S - m) = exp(scale S - m ln 2).
    const V c = simd::splat<V>(p.scale() * kLog2e);

    for (int kt = 0; kt < n_ktiles; ++kt) {
      const std::int64_t c0 = std::int64_t(kt) * kCols;
      const int cols = int(std::min<std::int64_t>(kCols, p.seq_k - c0));
      const int cols_padded = (cols + kChunk - 1) / kChunk * kChunk;
      const TileVisibility vis = classify_tile(rule, p.q_pos, r0, r0 + rows, p.k_pos, c0, c0 + cols);
      if (vis == TileVisibility::hidden) continue;
      if (progress.poll) progress.poll(progress.context);

      const std::uint16_t* k_tile = kt_packed + std::size_t(kt) * kCols * d;
      const std::uint16_t* v_tile = vp_packed + std::size_t(kt) * kCols * d;
      scores(s, k_tile, rows_padded, cols_padded);
      if (vis == TileVisibility::partial) {
        for (int j = 0; j < cols; ++j) s.k_pos[j] = p.k_pos(c0 + j);
        if (rule.documents()) {
          DocumentIds<kRows, kCols> docs(rule, s.q_pos, rows, s.k_pos, cols);
          for (int i = 0; i < rows; ++i)
            for (int j = 0; j < cols; ++j)
              if (!rule.visible(s.q_pos[i], s.k_pos[j]) || docs.q[i] != docs.k[j]) s.s[i * kCols + j] = ninf;
        } else {
          for (int i = 0; i < rows; ++i)
            for (int j = 0; j < cols; ++j)
              if (!rule.visible(s.q_pos[i], s.k_pos[j])) s.s[i * kCols + j] = ninf;
        }
      }
      for (int i = 0; i < rows_padded; ++i)
        for (int j = cols; j < cols_padded; ++j) s.s[i * kCols + j] = ninf;
      softmax_rows(s, rows_padded, cols_padded, c);
      accumulate_pv(s, v_tile, rows_padded, cols_padded);
    }
    _tile_release();

    for (int i = 0; i < rows; ++i) {
      const bool seen = s.l[i] > 0.0f;
      const float inv = seen ? 1.0f / s.l[i] : 0.0f;
      TOut* dst = &out(b, r0 + i, h, 0);
      for (int x = 0; x < d; ++x) from_float(s.o[i * ld + x] * inv, dst[x]);
      lse(b, h, r0 + i) = seen ? (s.m[i] + std::log2(s.l[i])) * kLn2 : ninf;
    }
  }

  /// S[0:rows][0:cols] = Q K^T, in 32 x 32 blocks (four C tiles, two A, two B).
  void scores(const Scratch& s, const std::uint16_t* kt_tile, int rows_padded, int cols_padded) const {
    const std::size_t q_stride = std::size_t(d) * 2;          // bytes
    const std::size_t kt_stride = std::size_t(kCols) * 4;     // bytes per pair row
    const std::size_t s_stride = std::size_t(kCols) * 4;
    for (int i = 0; i < rows_padded; i += 2 * kBlock) {
      for (int j = 0; j < cols_padded; j += 2 * kBlock) {
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
        for (int x = 0; x < d; x += kChunk) {
          _tile_loadd(4, s.q + std::size_t(i) * d + x, q_stride);
          _tile_loadd(5, s.q + std::size_t(i + kBlock) * d + x, q_stride);
          const std::uint16_t* kt = kt_tile + (std::size_t(x / 2) * kCols + j) * 2;
          _tile_loadd(6, kt, kt_stride);
          _tile_loadd(7, kt + 2 * kBlock, kt_stride);
          _tile_dpbf16ps(0, 4, 6);
          _tile_dpbf16ps(1, 4, 7);
          _tile_dpbf16ps(2, 5, 6);
          _tile_dpbf16ps(3, 5, 7);
        }
        float* out = s.s + std::size_t(i) * kCols + j;
        _tile_stored(0, out, s_stride);
        _tile_stored(1, out + kBlock, s_stride);
        _tile_stored(2, out + kBlock * kCols, s_stride);
        _tile_stored(3, out + kBlock * kCols + kBlock, s_stride);
      }
    }
  }

  /// Row-wise online softmax: P = exp2(c S - m) split into bf16 hi + lo, l and m updated, O rows
  /// whose max moved rescaled. Rows go in groups of 16 so that the per-row scalars (max, sum,
  /// the rescale factor) are one vector per group: per row they cost more than the exponentials.
  void softmax_rows(const Scratch& s, int rows_padded, int cols_padded, V c) const {
    const int ld = row_pitch(d);
    const int vectors = cols_padded / 16;
    const float ninf = -std::numeric_limits<float>::infinity();
    for (int i0 = 0; i0 < rows_padded; i0 += 16) {
      alignas(64) float row_max[16];
      for (int r = 0; r < 16; ++r) {
        const float* srow = s.s + std::size_t(i0 + r) * kCols;
        V vmax = simd::splat<V>(ninf);
        for (int t = 0; t < vectors; ++t) vmax = simd::max(vmax, simd::load_as<V>(srow + 16 * t) * c);
        row_max[r] = reduce_max(vmax);
      }
      const V m_old = simd::load_as<V>(s.m + i0);
      const V m_new = simd::max(m_old, simd::load_as<V>(row_max));
      // A row that has seen nothing yet keeps m = -inf; subtracting 0 keeps exp2(-inf) = 0.
      const V m_sub = m_new < simd::splat<V>(-3.0e38f) ? simd::splat<V>(0.0f) : m_new;
      const V alpha = simd::exp2(m_old - m_sub);
      alignas(64) float row_sum[16];
      for (int r = 0; r < 16; ++r) {
        const float* srow = s.s + std::size_t(i0 + r) * kCols;
        std::uint16_t* prow = s.pb + std::size_t(i0 + r) * kCols;
        std::uint16_t* plow = s.pl + std::size_t(i0 + r) * kCols;
        const V vsub = simd::splat<V>(m_sub[r]);
        V vsum = simd::splat<V>(0.0f);
        for (int t = 0; t < vectors; ++t) {
          const V pt = simd::exp2(simd::load_as<V>(srow + 16 * t) * c - vsub);
          if (kSplitP)
            split_bf16(pt, prow + 16 * t, plow + 16 * t);
          else
            round_bf16(pt, prow + 16 * t);
          vsum = vsum + pt;
        }
        row_sum[r] = reduce_add(vsum);
      }
      simd::store_as(s.l + i0, simd::fma(simd::load_as<V>(s.l + i0), alpha, simd::load_as<V>(row_sum)));
      simd::store_as(s.m + i0, m_new);
      for (int r = 0; r < 16; ++r) {
        if (alpha[r] == 1.0f) continue;
        float* o = s.o + std::size_t(i0 + r) * ld;
        const V va = simd::splat<V>(alpha[r]);
        for (int t = 0; t < d; t += 16) simd::store_as(o + t, simd::load_as<V>(o + t) * va);
      }
    }
  }

  /// O[0:rows][0:d] += (P_hi + P_lo) V, in 32 x 32 blocks of O held in four C tiles across the
  /// key chunks.
  void accumulate_pv(const Scratch& s, const std::uint16_t* vp_tile, int rows_padded, int cols_padded) const {
    const int ld = row_pitch(d);
    const std::size_t o_stride = std::size_t(ld) * 4;
    const std::size_t p_stride = std::size_t(kCols) * 2;
    const std::size_t v_stride = std::size_t(d) * 4;  // bytes per pair of key rows
    for (int i = 0; i < rows_padded; i += 2 * kBlock) {
      for (int x = 0; x < d; x += 2 * kBlock) {
        float* o = s.o + std::size_t(i) * ld + x;
        _tile_loadd(0, o, o_stride);
        _tile_loadd(1, o + kBlock, o_stride);
        _tile_loadd(2, o + kBlock * ld, o_stride);
        _tile_loadd(3, o + kBlock * ld + kBlock, o_stride);
        for (int j = 0; j < cols_padded; j += kChunk) {
          _tile_loadd(4, s.pb + std::size_t(i) * kCols + j, p_stride);
          _tile_loadd(5, s.pb + std::size_t(i + kBlock) * kCols + j, p_stride);
          const std::uint16_t* vp = vp_tile + (std::size_t(j / 2) * d + x) * 2;
          _tile_loadd(6, vp, v_stride);
          _tile_loadd(7, vp + 2 * kBlock, v_stride);
          _tile_dpbf16ps(0, 4, 6);
          _tile_dpbf16ps(1, 4, 7);
          _tile_dpbf16ps(2, 5, 6);
          _tile_dpbf16ps(3, 5, 7);
          if (kSplitP) {
            _tile_loadd(4, s.pl + std::size_t(i) * kCols + j, p_stride);
            _tile_loadd(5, s.pl + std::size_t(i + kBlock) * kCols + j, p_stride);
            _tile_dpbf16ps(0, 4, 6);
            _tile_dpbf16ps(1, 4, 7);
            _tile_dpbf16ps(2, 5, 6);
            _tile_dpbf16ps(3, 5, 7);
          }
        }
        _tile_stored(0, o, o_stride);
        _tile_stored(1, o + kBlock, o_stride);
        _tile_stored(2, o + kBlock * ld, o_stride);
        _tile_stored(3, o + kBlock * ld + kBlock, o_stride);
      }
    }
  }
};

}  // namespace

bool host_amx_bf16_enabled() {
  const char* env = std::getenv("RFA_HOST_AMX");
  if (env != nullptr && std::strcmp(env, "0") == 0) return false;
  return tile_state_granted();
}

template <class TOut>
bool flash_forward_amx(const AttentionParams& p, Tensor4<const bf16_t> q, Tensor4<const bf16_t> k,
                       Tensor4<const bf16_t> v, Tensor4<TOut> out, Tensor3<float> lse,
                       const ProgressHook& progress) {
  if (p.head_dim % kChunk != 0 || !host_amx_bf16_enabled()) return false;
  AmxForwardTiles<TOut> f;
  f.p = p;
  f.q = q;
  f.k = k;
  f.v = v;
  f.out = out;
  f.lse = lse;
  if (Exec().concurrency() == 1) f.progress = progress;
  f.d = int(p.head_dim);
  f.group = int(p.heads / p.kv_heads);
  f.n_qtiles = int((p.seq_q + kRows - 1) / kRows);
  f.n_ktiles = int((p.seq_k + kCols - 1) / kCols);
  const std::size_t packed = std::size_t(f.n_ktiles) * kCols * f.d;
  PackKeyTiles pack{k, v, Kokkos::View<std::uint16_t*, Kokkos::HostSpace>(
                              Kokkos::view_alloc(Kokkos::WithoutInitializing, "rfa::amx_packed_k"), packed),
                    Kokkos::View<std::uint16_t*, Kokkos::HostSpace>(
                        Kokkos::view_alloc(Kokkos::WithoutInitializing, "rfa::amx_packed_v"), packed),
                    0, 0, f.d, p.seq_k};
  f.kt_packed = pack.kt.data();
  f.vp_packed = pack.vp.data();
  const std::size_t scratch = scratch_bytes<AmxForwardTiles<TOut>>(f.d);
  for (int b = 0; b < int(p.batch); ++b) {
    for (int hk = 0; hk < int(p.kv_heads); ++hk) {
      pack.b = f.b = b;
      pack.hk = f.hk = hk;
      Kokkos::parallel_for("rfa::flash_forward_amx_pack", Kokkos::RangePolicy<Exec>(0, f.n_ktiles), pack);
      Exec().fence();
      for_each_league_chunk<Policy>("rfa::flash_forward_amx", std::int64_t(f.group) * f.n_qtiles, f,
                                    [&](Policy& policy) { policy.set_scratch_size(1, Kokkos::PerTeam(scratch)); });
      Exec().fence();
    }
  }
  return true;
}

#else  // no AMX in this build

bool host_amx_bf16_enabled() { return false; }

template <class TOut>
bool flash_forward_amx(const AttentionParams&, Tensor4<const bf16_t>, Tensor4<const bf16_t>, Tensor4<const bf16_t>,
                       Tensor4<TOut>, Tensor3<float>, const ProgressHook&) {
  return false;
}

#endif

template bool flash_forward_amx<bf16_t>(const AttentionParams&, Tensor4<const bf16_t>, Tensor4<const bf16_t>,
                                        Tensor4<const bf16_t>, Tensor4<bf16_t>, Tensor3<float>, const ProgressHook&);
template bool flash_forward_amx<float>(const AttentionParams&, Tensor4<const bf16_t>, Tensor4<const bf16_t>,
                                       Tensor4<const bf16_t>, Tensor4<float>, Tensor3<float>, const ProgressHook&);

}  // namespace kernels
}  // namespace rfa
