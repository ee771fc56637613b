// SPDX-License-Identifier: BSD-3-Clause
// Forward flash attention for bf16 on hardware bf16 products: Intel AMX tiles (tdpbf16ps: 16 x 32
// bf16 by 32 x 16 bf16 into 16 x 16 fp32, several times the fp32 FMA rate) or, without them,
// AVX512-BF16 dot products (vdpbf16ps, twice the fp32 FMA's multiply-adds per instruction), with
// the same exact bf16 products and fp32 sums the portable kernel gets by widening
// (kernels/bf16_product_engines.hpp). P is fp32 and the products take bf16. For fp32 partials
// (what the ring merges) P enters P V as two bf16 terms, hi + lo (16 significant bits), on
// either engine: rounding P to bf16 alone, as GPU kernels do, would put ~1e-3 relative error
// into them, where the forward's contract is fp32 accuracy (docs/architecture.md §3); the second
// term costs one more product per P tile (on the tiles the forward runs at ~570 GFLOP/s against
// ~690 with one term: perf/RESULTS.md, "2026-11-24 — CPU kernels on AMX tiles (bf16) and retuned
// (fp32), against PyTorch, one thread"; on dot products P V then costs what it costs in fp32,
// S = Q K^T still half). A bf16 output takes P rounded once: its own rounding to bf16 is the
// larger error. Row sums, and so lse, are always those of the unrounded P.
//
// Layout per team (one query tile of one head): scores S = Q K^T are query-major, so Q rows
// are the A operand as they are, K^T goes to B in the tiles' pair-interleaved (VNNI) form (a
// 32-bit transpose of the K tile), the softmax runs along rows, P (bf16 hi + lo, query-major) is the A
// operand of O += P V, and V goes to B with pairs of key rows interleaved.
#include "kernels/flash_forward_bf16.hpp"

#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "kernels/bf16_product_engines.hpp"

#if RFA_HOST_BF16_PAIRS
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/forward_tile_plan.hpp"
#include "kernels/league_chunks.hpp"
#include "kernels/micro_gemm.hpp"  // round_up
#include "kernels/scratch_carver.hpp"
#include "kernels/seen_key_tiles.hpp"
#include "kernels/simd.hpp"
#include "kernels/tile_visibility.hpp"
#endif

namespace rfa {
namespace kernels {

#if RFA_HOST_BF16_PAIRS
namespace {

constexpr int kRows = 192;  // query rows per tile (12 AMX blocks of 16), at most
static_assert(kRows == kHostForwardTile.q, "the query tiles (kernels/forward_tile_plan.hpp) are the fp32 kernel's");
constexpr int kCols = 128;  // keys per tile (8 AMX blocks of 16; 4 steps of 32 for P V)
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

using Exec = Kokkos::DefaultHostExecutionSpace;
using Policy = Kokkos::TeamPolicy<Exec>;
using Member = Policy::member_type;
using V = simd::f16;

/// K and V of every (batch, kv head) unit, tile by tile, in the forms the tiles read: K^T in pairs
/// along d, kt[p][j] (32 bits) = K[j][2p .. 2p+1], and V with pairs of key rows interleaved,
/// vp[j / 2][x][j % 2] = V[j][x]; kCols * d values per tile for K, kCols * dim_v for V. Rows past the last key
/// are zero, so padded scores are finite before the mask and 0 * V stays 0. Packed once per
/// call and unit, not once per query tile: every query tile of the unit's heads reads them. Only
/// the key tiles some query sees are packed, each into its slot (kernels/seen_key_tiles.hpp).
struct PackKeyTiles {
  Tensor4<const bf16_t> k, v;
  std::uint16_t* const* kt_units = nullptr;  // one buffer per unit, slots * kCols * d values
  std::uint16_t* const* vp_units = nullptr;  // and slots * kCols * dim_v
  const int* slot_tiles = nullptr;           // the key tile in each slot
  int kv_heads = 1, d = 0, dim_v = 0, slots = 0;
  std::int64_t seq_k = 0;

  void operator()(std::int64_t item) const {
    const std::int64_t unit = item / slots;
    const int slot = int(item % slots);
    const int b = int(unit / kv_heads), hk = int(unit % kv_heads);
    typedef std::uint16_t u16x16 __attribute__((vector_size(32)));
    typedef std::uint32_t u32x16 __attribute__((vector_size(64)));
    const std::int64_t c0 = std::int64_t(slot_tiles[slot]) * kCols;
    const int cols = int(std::min<std::int64_t>(kCols, seq_k - c0));
    const int pairs = d / 2;
    std::uint32_t* kt32 = reinterpret_cast<std::uint32_t*>(kt_units[unit] + std::size_t(slot) * kCols * d);
    std::uint16_t* vtile = vp_units[unit] + std::size_t(slot) * kCols * dim_v;
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
      const std::uint16_t* odd =
          j + 1 < cols ? reinterpret_cast<const std::uint16_t*>(&v(b, c0 + j + 1, hk, 0)) : nullptr;
      std::uint16_t* dst = vtile + std::size_t(j / 2) * 2 * dim_v;
      for (int x = 0; x < dim_v; x += 16) {
        u16x16 a = zero, c = zero;
        if (even) std::memcpy(&a, even + x, sizeof a);
        if (odd) std::memcpy(&c, odd + x, sizeof c);
        const u32x16 w = __builtin_convertvector(a, u32x16) | (__builtin_convertvector(c, u32x16) << 16);
        std::memcpy(dst + 2 * x, &w, sizeof w);
      }
    }
  }
};

template <class Products, class TOut>
struct Bf16ForwardTiles {
  // fp32 partials keep fp32 accuracy unless the caller says their result ends in 16 bits
  // (AttentionParams::fp32_accurate_partials): P enters P V as hi + lo. A bf16 output is
  // rounded to 8 bits in the end, a larger error than that of P in bf16 alone (averaged over
  // the keys), so there P V is one product per tile, as in GPU kernels.
  bool split_p = false;

  AttentionParams p;
  Tensor4<const bf16_t> q, k, v;
  Tensor4<TOut> out;
  Tensor3<float> lse;
  const std::uint16_t* const* kt_units = nullptr;  // PackKeyTiles' buffers, per (batch, kv head)
  const std::uint16_t* const* vp_units = nullptr;
  const int* slot_of = nullptr;  // each key tile's slot in them (-1: no query sees the tile)
  int d = 0;                     // head dim of Q and K
  int dim_v = 0;                 // head dim of V and the output
  int group = 1;
  const ForwardTilePlan* tiles = nullptr;  // each team's batch, head and query rows
  int n_ktiles = 0;
  std::int64_t first_item = 0;
  ProgressHook progress;

  struct Scratch {
    std::uint16_t* q;   // [kRows][d]: Q rows as they are (bf16 bits)
    std::uint16_t* pb;  // [kRows][kCols]: P rounded to bf16
    std::uint16_t* pl;  // [kRows][kCols]: P - pb rounded to bf16 (P V = pb V + pl V to ~2^-17)
    float* s;           // [kRows][kCols]: scores
    float* o;           // [kRows][row_pitch(dim_v)]: output accumulator
    float *m, *l;
    std::int64_t *q_pos, *k_pos;
  };

  static Scratch carve(ScratchCarver& c, int d, int dim_v) {
    Scratch s;
    s.q = c.take<std::uint16_t>(std::size_t(kRows) * d);
    s.pb = c.take<std::uint16_t>(std::size_t(kRows) * kCols);
    s.pl = c.take<std::uint16_t>(std::size_t(kRows) * kCols);
    s.s = c.take<float>(std::size_t(kRows) * kCols);
    s.o = c.take<float>(std::size_t(kRows) * row_pitch(dim_v));
    s.m = c.take<float>(kRows);
    s.l = c.take<float>(kRows);
    s.q_pos = c.take<std::int64_t>(kRows);
    s.k_pos = c.take<std::int64_t>(kCols);
    return s;
  }

  void operator()(const Member& team) const {
    const ForwardTilePlan::Item work = tiles->item(first_item + team.league_rank());
    const int h = work.h, b = work.b;
    const int hk = h / group;
    const std::int64_t unit = std::int64_t(b) * p.kv_heads + hk;
    const std::int64_t r0 = work.rows.begin;
    const int rows = int(work.rows.end - r0);
    const int rows_padded = round_up(rows, kProductStep);
    const int ld = row_pitch(dim_v);
    const float ninf = -std::numeric_limits<float>::infinity();
    Scratch s = carve_team_scratch<Bf16ForwardTiles>(team, d, dim_v);
    const MaskRule rule = p.rule(b);
    Products::begin();

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
    // Scores in the log2 domain: exp2(c S - m) = exp(scale S - m ln 2). Capped scores are put in
    // it when they are capped (softcap * log2 e * tanh(scale S / softcap)), and enter the softmax
    // as they are.
    const bool capped = p.softcap > 0.0f;
    const V c = simd::splat<V>(capped ? 1.0f : p.scale() * kLog2e);

    for (int kt = 0; kt < n_ktiles; ++kt) {
      const std::int64_t c0 = std::int64_t(kt) * kCols;
      const int cols = int(std::min<std::int64_t>(kCols, p.seq_k - c0));
      const int cols_padded = round_up(cols, kProductStep);
      const TileVisibility vis = classify_tile(rule, p.q_pos, r0, r0 + rows, p.k_pos, c0, c0 + cols);
      // A tile without a slot is hidden from every query (kernels/seen_key_tiles.hpp).
      if (vis == TileVisibility::hidden || slot_of[kt] < 0) continue;
      if (progress.poll) progress.poll(progress.context);

      const std::uint16_t* k_tile = kt_units[unit] + std::size_t(slot_of[kt]) * kCols * d;
      const std::uint16_t* v_tile = vp_units[unit] + std::size_t(slot_of[kt]) * kCols * dim_v;
      // S = Q K^T, then (after the softmax) O += P V.
      Products::gemm(rows_padded, cols_padded, d, pairs::RowsA{s.q, nullptr, std::size_t(d)},
                     pairs::PairsB{k_tile, nullptr, std::size_t(2 * kCols)}, s.s, kCols, false);
      // The cap comes before the mask's -inf, which tanh would make finite.
      if (capped) simd::cap_rows(s.s, kCols, rows_padded, cols_padded, p.softcap * kLog2e, p.scale() / p.softcap);
      if (vis == TileVisibility::partial) {
        for (int j = 0; j < cols; ++j) s.k_pos[j] = p.k_pos(c0 + j);
        for_each_hidden<kRows, kCols>(rule, s.q_pos, rows, s.k_pos, cols,
                                      [&](int i, int j) { s.s[i * kCols + j] = ninf; });
      }
      for (int i = 0; i < rows_padded; ++i)
        for (int j = cols; j < cols_padded; ++j) s.s[i * kCols + j] = ninf;
      softmax_rows(s, rows_padded, cols_padded, c);
      Products::gemm(rows_padded, dim_v, cols_padded, pairs::RowsA{s.pb, split_p ? s.pl : nullptr, std::size_t(kCols)},
                     pairs::PairsB{v_tile, nullptr, std::size_t(2 * dim_v)}, s.o, std::size_t(ld), true);
    }
    Products::end();

    for (int i = 0; i < rows; ++i) {
      const bool seen = s.l[i] > 0.0f;
      const float inv = seen ? 1.0f / s.l[i] : 0.0f;
      TOut* dst = &out(b, r0 + i, h, 0);
      for (int x = 0; x < dim_v; ++x) from_float(s.o[i * ld + x] * inv, dst[x]);
      lse(b, h, r0 + i) = seen ? (s.m[i] + std::log2(s.l[i])) * kLn2 : ninf;
    }
  }

  /// Row-wise online softmax: P = exp2(c S - m) split into bf16 hi + lo, l and m updated, O rows
  /// whose max moved rescaled. Rows go in groups of 16 so that the per-row scalars (max, sum,
  /// the rescale factor) are one vector per group: per row they cost more than the exponentials.
  void softmax_rows(const Scratch& s, int rows_padded, int cols_padded, V c) const {
    const int ld = row_pitch(dim_v);
    const int vectors = cols_padded / 16;
    const float ninf = -std::numeric_limits<float>::infinity();
    for (int i0 = 0; i0 < rows_padded; i0 += 16) {
      alignas(64) float row_max[16];
      // The scores are scaled once, here, and stored: the exponents below subtract the max from
      // these very values. Scaled twice, one product could be fused into the subtraction (an
      // FMA) and the other rounded, and the max's own exponent would be that rounding, not 0:
      // at scores of 1e7 and beyond, whole powers of two (p of 0, or inf and NaN).
      for (int r = 0; r < 16; ++r) {
        float* srow = s.s + std::size_t(i0 + r) * kCols;
        V vmax = simd::splat<V>(ninf);
        for (int t = 0; t < vectors; ++t) {
          const V scaled = simd::load_as<V>(srow + 16 * t) * c;
          simd::store_as(srow + 16 * t, scaled);
          vmax = simd::max(vmax, scaled);
        }
        row_max[r] = simd::reduce_max(vmax);
      }
      const V m_old = simd::load_as<V>(s.m + i0);
      const V m_new = simd::max(m_old, simd::load_as<V>(row_max));
      // A row that has seen nothing yet keeps m = -inf; subtracting 0 keeps exp2(-inf) = 0.
      // Only -inf: a finite max, however far below zero, is a score the row sees.
      const V m_sub = m_new == simd::splat<V>(-std::numeric_limits<float>::infinity()) ? simd::splat<V>(0.0f) : m_new;
      const V alpha = simd::exp2(m_old - m_sub);
      alignas(64) float row_sum[16];
      for (int r = 0; r < 16; ++r) {
        const float* srow = s.s + std::size_t(i0 + r) * kCols;
        std::uint16_t* prow = s.pb + std::size_t(i0 + r) * kCols;
        std::uint16_t* plow = s.pl + std::size_t(i0 + r) * kCols;
        const V vsub = simd::splat<V>(m_sub[r]);
        V vsum = simd::splat<V>(0.0f);
        for (int t = 0; t < vectors; ++t) {
          const V pt = simd::exp2(simd::load_as<V>(srow + 16 * t) - vsub);
          if (split_p) {
            __m256i hi, lo;
            pairs::split_bf16(pt, hi, lo);
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(prow + 16 * t), hi);
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(plow + 16 * t), lo);
          } else {
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(prow + 16 * t), pairs::round_bf16(pt));
          }
          vsum = vsum + pt;
        }
        row_sum[r] = simd::reduce_add(vsum);
      }
      simd::store_as(s.l + i0, simd::fma(simd::load_as<V>(s.l + i0), alpha, simd::load_as<V>(row_sum)));
      simd::store_as(s.m + i0, m_new);
      for (int r = 0; r < 16; ++r) {
        if (alpha[r] == 1.0f) continue;
        float* o = s.o + std::size_t(i0 + r) * ld;
        const V va = simd::splat<V>(alpha[r]);
        for (int t = 0; t < dim_v; t += 16) simd::store_as(o + t, simd::load_as<V>(o + t) * va);
      }
    }
  }
};

/// The packed forms of a call with these params: a slot for each key tile some query sees, the
/// slot tables (fill_key_tile_slots), and a unit's K^T and V pairs of kCols keys per slot.
struct PackedSizes {
  int slots;
  std::int64_t table_bytes;
  std::int64_t k_elems, v_elems;  // one unit's
};
PackedSizes packed_sizes(const AttentionParams& p, int slots) {
  const std::int64_t keys = std::int64_t(slots) * kCols;
  return {slots, key_tile_slots_bytes(p, kCols), keys * p.head_dim, keys * p.dv()};
}
PackedSizes packed_sizes(const AttentionParams& p) {
  return packed_sizes(p, for_each_seen_key_tile(p, kCols, [](int, int) {}));
}

constexpr const char* kSlotsLabel = "rfa::bf16_key_tile_slots";

/// The slot tables, then the packed K and V of every unit, one after another (each unit's share
/// a multiple of 2 KiB, so every unit starts as aligned as the buffer).
std::vector<WorkspaceBuffer> packed_kv_buffers(ForwardWorkspace& ws, const AttentionParams& p,
                                               const PackedSizes& sizes) {
  const std::int64_t units = p.batch * p.kv_heads, bytes = std::int64_t(sizeof(std::uint16_t)) * units;
  return {{kSlotsLabel, sizes.table_bytes, &ws.slots},
          {"rfa::bf16_packed_k", bytes * sizes.k_elems, &ws.k},
          {"rfa::bf16_packed_v", bytes * sizes.v_elems, &ws.v}};
}

/// Runs the kernel on `Products`; the arguments are checked by the caller.
template <class Products, class TOut>
void run_forward(const AttentionParams& p, Tensor4<const bf16_t> q, Tensor4<const bf16_t> k, Tensor4<const bf16_t> v,
                 Tensor4<TOut> out, Tensor3<float> lse, const ProgressHook& progress, ForwardWorkspace& ws) {
  Bf16ForwardTiles<Products, TOut> f;
  f.p = p;
  f.q = q;
  f.k = k;
  f.v = v;
  f.out = out;
  f.lse = lse;
  f.split_p = std::is_same<TOut, float>::value && p.fp32_accurate_partials;
  if (Exec().concurrency() == 1) f.progress = progress;
  f.d = int(p.head_dim);
  f.dim_v = int(p.dv());
  f.group = int(p.heads / p.kv_heads);
  const ForwardTilePlan tiles(p, kHostForwardTile);
  f.tiles = &tiles;
  f.n_ktiles = int(key_tile_count(p, kCols));
  // The key tiles some query sees, then their K and V for every (batch, kv head) unit, packed
  // one unit after another into the workspace's buffers, then teams over every (batch, head,
  // query tile), as in the portable kernel.
  const std::int64_t units = p.batch * p.kv_heads;
  // The tables first: filling them counts the slots the packed K and V need.
  const KeyTileSlots slots = fill_key_tile_slots_in(p, kCols, kSlotsLabel, ws.slots);
  const int* const slot = slots.table;
  const PackedSizes sizes = packed_sizes(p, slots.slots);
  grow_workspace(packed_kv_buffers(ws, p, sizes));
  std::vector<std::uint16_t*> kt_units, vp_units;
  for (std::int64_t u = 0; u < units; ++u) {
    kt_units.push_back(reinterpret_cast<std::uint16_t*>(ws.k.data()) + u * sizes.k_elems);
    vp_units.push_back(reinterpret_cast<std::uint16_t*>(ws.v.data()) + u * sizes.v_elems);
  }
  PackKeyTiles pack;
  pack.k = k;
  pack.v = v;
  pack.kt_units = kt_units.data();
  pack.vp_units = vp_units.data();
  pack.slot_tiles = slot + f.n_ktiles;
  pack.kv_heads = int(p.kv_heads);
  pack.d = f.d;
  pack.dim_v = f.dim_v;
  pack.slots = sizes.slots;
  pack.seq_k = p.seq_k;
  Kokkos::parallel_for("rfa::flash_forward_bf16_pack",
                       Kokkos::RangePolicy<Exec, Kokkos::IndexType<std::int64_t>>(0, units * sizes.slots), pack);
  Exec().fence();
  f.kt_units = kt_units.data();
  f.vp_units = vp_units.data();
  f.slot_of = slot;
  const std::size_t scratch = scratch_bytes<Bf16ForwardTiles<Products, TOut>>(f.d, f.dim_v);
  for_each_league_chunk<Policy>("rfa::flash_forward_bf16", tiles.items(), f,
                                [&](Policy& policy) { policy.set_scratch_size(1, Kokkos::PerTeam(scratch)); });
  Exec().fence();
}

}  // namespace

#endif

template <class TOut>
bool flash_forward_bf16(const AttentionParams& p, Tensor4<const bf16_t> q, Tensor4<const bf16_t> k,
                        Tensor4<const bf16_t> v, Tensor4<TOut> out, Tensor3<float> lse, const ProgressHook& progress,
                        ForwardWorkspace* workspace) {
#if RFA_HOST_BF16_PAIRS
  ForwardWorkspace own;  // freed at return unless the caller keeps one
  ForwardWorkspace& ws = workspace ? *workspace : own;
  return run_on_bf16_products(
      p, [&](auto products) { run_forward<decltype(products)>(p, q, k, v, out, lse, progress, ws); });
#else
  (void)p, (void)q, (void)k, (void)v, (void)out, (void)lse, (void)progress, (void)workspace;
  return false;
#endif
}

#if RFA_HOST_BF16_PAIRS
namespace {
/// Whether flash_forward_bf16 runs (and packs) for these params and storage dtype.
bool packs_on_products(const AttentionParams& p, rfa_dtype_t dtype) {
  return dtype == RFA_DTYPE_BFLOAT16 && host_bf16_products(p) != Bf16Products::none;
}
}  // namespace
#endif

std::int64_t flash_forward_bf16_workspace_bytes(const AttentionParams& p, rfa_dtype_t dtype) {
#if RFA_HOST_BF16_PAIRS
  if (packs_on_products(p, dtype)) {
    const PackedSizes sizes = packed_sizes(p);
    return sizes.table_bytes +
           std::int64_t(sizeof(std::uint16_t)) * p.batch * p.kv_heads * (sizes.k_elems + sizes.v_elems);
  }
#else
  (void)p;
  (void)dtype;
#endif
  return 0;
}

std::vector<WorkspaceBuffer> flash_forward_bf16_buffers(ForwardWorkspace& workspace, const AttentionParams& p,
                                                        rfa_dtype_t dtype) {
#if RFA_HOST_BF16_PAIRS
  if (packs_on_products(p, dtype)) return packed_kv_buffers(workspace, p, packed_sizes(p));
#else
  (void)workspace, (void)p, (void)dtype;
#endif
  return {};
}

template bool flash_forward_bf16<bf16_t>(const AttentionParams&, Tensor4<const bf16_t>, Tensor4<const bf16_t>,
                                         Tensor4<const bf16_t>, Tensor4<bf16_t>, Tensor3<float>, const ProgressHook&,
                                         ForwardWorkspace*);
template bool flash_forward_bf16<float>(const AttentionParams&, Tensor4<const bf16_t>, Tensor4<const bf16_t>,
                                        Tensor4<const bf16_t>, Tensor4<float>, Tensor3<float>, const ProgressHook&,
                                        ForwardWorkspace*);

}  // namespace kernels
}  // namespace rfa
