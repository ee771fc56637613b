// Forward flash attention on the host: one Kokkos team (of one thread) per
// (batch, head, query tile); the tile's running max, sum and output stay in scratch while
// the key tiles stream past (online softmax, DESIGN.md §3).
#include <cmath>
#include <limits>

#include "kernels/flash_attention.hpp"
#include "kernels/micro_gemm.hpp"
#include "kernels/tensor_checks.hpp"
#include "kernels/tile_visibility.hpp"

namespace rfa {
namespace kernels {
namespace {

constexpr int kTileRows = 96;  // query rows per tile (a multiple of kMicroRows)
constexpr int kTileCols = 96;  // key rows per tile (a multiple of 16)
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
  int n_ktiles = 0;

  struct Scratch {
    float *q, *kt, *v, *s, *o, *m, *l;
    std::int64_t *q_pos, *k_pos;
  };

  static std::size_t scratch_bytes(int d) {
    const std::size_t floats = std::size_t(kTileRows) * d * 2 + std::size_t(kTileCols) * d * 2 +
                               std::size_t(kTileRows) * kTileCols + 2 * kTileRows;
    return floats * sizeof(float) + (kTileRows + kTileCols) * sizeof(std::int64_t) + 256;
  }

  Scratch carve(const Member& team) const {
    char* base = static_cast<char*>(team.team_scratch(1).get_shmem(scratch_bytes(d)));
    Scratch s;
    auto take = [&](std::size_t n) {
      float* f = reinterpret_cast<float*>(base);
      base += n * sizeof(float);
      return f;
    };
    s.q = take(std::size_t(kTileRows) * d);
    s.kt = take(std::size_t(kTileCols) * d);
    s.v = take(std::size_t(kTileCols) * d);
    s.s = take(std::size_t(kTileRows) * kTileCols);
    s.o = take(std::size_t(kTileRows) * d);
    s.m = take(kTileRows);
    s.l = take(kTileRows);
    s.q_pos = reinterpret_cast<std::int64_t*>(base);
    s.k_pos = s.q_pos + kTileRows;
    return s;
  }

  void operator()(const Member& team) const {
    const std::int64_t item = team.league_rank();
    const int qt = int(item % n_qtiles);
    const std::int64_t bh = item / n_qtiles;
    const int h = int(bh % p.heads);
    const int b = int(bh / p.heads);
    const int hk = int(h / (p.heads / p.kv_heads));
    const std::int64_t r0 = std::int64_t(qt) * kTileRows;
    const int rows = int(std::min<std::int64_t>(kTileRows, p.seq_q - r0));
    const int rows_padded = round_up(rows, kMicroRows);
    const float ninf = -std::numeric_limits<float>::infinity();
    Scratch s = carve(team);

    // Q in the log2 domain: S = (scale * log2 e) Q K^T feeds exp2 directly.
    const float q_scale = p.scale() * kLog2e;
    for (int i = 0; i < rows; ++i) {
      for (int x = 0; x < d; ++x) s.q[i * d + x] = to_float(q(b, r0 + i, h, x)) * q_scale;
      s.q_pos[i] = p.q_pos(r0 + i);
    }
    for (int i = rows * d; i < rows_padded * d; ++i) s.q[i] = 0.0f;
    for (int i = 0; i < rows_padded * d; ++i) s.o[i] = 0.0f;
    for (int i = 0; i < rows; ++i) {
      s.m[i] = ninf;
      s.l[i] = 0.0f;
    }

    for (int kt = 0; kt < n_ktiles; ++kt) {
      const std::int64_t c0 = std::int64_t(kt) * kTileCols;
      const int cols = int(std::min<std::int64_t>(kTileCols, p.seq_k - c0));
      const int cols_padded = round_up(cols, simd::kLanes);
      const TileVisibility vis = classify_tile(p.mask, p.q_pos, r0, r0 + rows, p.k_pos, c0, c0 + cols);
      if (vis == TileVisibility::hidden) continue;

      for (int j = 0; j < cols; ++j) {
        for (int x = 0; x < d; ++x) {
          s.kt[x * kTileCols + j] = to_float(k(b, c0 + j, hk, x));
          s.v[j * d + x] = to_float(v(b, c0 + j, hk, x));
        }
      }
      for (int j = cols; j < cols_padded; ++j) {
        for (int x = 0; x < d; ++x) {
          s.kt[x * kTileCols + j] = 0.0f;
          s.v[j * d + x] = 0.0f;
        }
      }

      gemm(rows_padded, cols_padded, d, MatrixA{s.q, d, 1}, s.kt, kTileCols, s.s, kTileCols, false);

      if (vis == TileVisibility::partial) {
        for (int j = 0; j < cols; ++j) s.k_pos[j] = p.k_pos(c0 + j);
        for (int i = 0; i < rows; ++i)
          for (int j = 0; j < cols; ++j)
            if (!key_visible(s.q_pos[i], s.k_pos[j])) s.s[i * kTileCols + j] = ninf;
      }
      for (int i = 0; i < rows; ++i)
        for (int j = cols; j < cols_padded; ++j) s.s[i * kTileCols + j] = ninf;

      online_softmax(s, rows, cols_padded);
      for (int i = rows; i < rows_padded; ++i)
        for (int j = 0; j < cols_padded; ++j) s.s[i * kTileCols + j] = 0.0f;

      gemm(rows_padded, d, cols_padded, MatrixA{s.s, kTileCols, 1}, s.v, d, s.o, d, true);
    }

    for (int i = 0; i < rows; ++i) {
      const bool seen = s.l[i] > 0.0f;
      const float inv = seen ? 1.0f / s.l[i] : 0.0f;
      for (int x = 0; x < d; ++x) from_float(s.o[i * d + x] * inv, out(b, r0 + i, h, x));
      lse(b, h, r0 + i) = seen ? (s.m[i] + std::log2(s.l[i])) * kLn2 : ninf;
    }
  }

  /// Turns the score rows into probabilities against the running max, rescaling the
  /// running sum and output where the max moved.
  void online_softmax(const Scratch& s, int rows, int cols_padded) const {
    const float ninf = -std::numeric_limits<float>::infinity();
    for (int i = 0; i < rows; ++i) {
      float* row = s.s + i * kTileCols;
      simd::f8 vmax = simd::broadcast(ninf);
      for (int j = 0; j < cols_padded; j += simd::kLanes) vmax = simd::max(vmax, simd::load(row + j));
      const float m_old = s.m[i];
      const float m_new = std::max(m_old, simd::reduce_max(vmax));
      if (m_new == ninf) {  // nothing visible yet in this row
        for (int j = 0; j < cols_padded; ++j) row[j] = 0.0f;
        continue;
      }
      const simd::f8 vm = simd::broadcast(m_new);
      simd::f8 vsum = simd::broadcast(0.0f);
      for (int j = 0; j < cols_padded; j += simd::kLanes) {
        const simd::f8 pj = simd::exp2(simd::load(row + j) - vm);
        simd::store(row + j, pj);
        vsum = vsum + pj;
      }
      const float alpha = m_old == ninf ? 0.0f : std::exp2(m_old - m_new);
      s.l[i] = s.l[i] * alpha + simd::reduce_add(vsum);
      s.m[i] = m_new;
      if (alpha != 1.0f) {
        float* o = s.o + i * d;
        const simd::f8 va = simd::broadcast(alpha);
        for (int x = 0; x < d; x += simd::kLanes) simd::store(o + x, simd::load(o + x) * va);
      }
    }
  }
};

}  // namespace

template <class T, class TOut>
void flash_forward(const AttentionParams& p, Tensor4<const T> q, Tensor4<const T> k, Tensor4<const T> v,
                   Tensor4<TOut> out, Tensor3<float> lse) {
  validate(p);
  check_tensor(q, "q", p.batch, p.seq_q, p.heads, p.head_dim);
  check_tensor(k, "k", p.batch, p.seq_k, p.kv_heads, p.head_dim);
  check_tensor(v, "v", p.batch, p.seq_k, p.kv_heads, p.head_dim);
  check_tensor(out, "out", p.batch, p.seq_q, p.heads, p.head_dim);
  check_tensor(lse, "lse", p.batch, p.heads, p.seq_q);

  ForwardTiles<T, TOut> f;
  f.p = p;
  f.q = q;
  f.k = k;
  f.v = v;
  f.out = out;
  f.lse = lse;
  f.d = int(p.head_dim);
  f.n_qtiles = int((p.seq_q + kTileRows - 1) / kTileRows);
  f.n_ktiles = int((p.seq_k + kTileCols - 1) / kTileCols);
  const std::int64_t league = p.batch * p.heads * f.n_qtiles;
  Policy policy(Exec(), int(league), 1);
  policy.set_scratch_size(1, Kokkos::PerTeam(ForwardTiles<T, TOut>::scratch_bytes(f.d)));
  Kokkos::parallel_for("rfa::flash_forward", policy, f);
  Exec().fence();
}

#define RFA_INSTANTIATE_FORWARD(T, TOut)                                                          \
  template void flash_forward<T, TOut>(const AttentionParams&, Tensor4<const T>, Tensor4<const T>, \
                                       Tensor4<const T>, Tensor4<TOut>, Tensor3<float>);
RFA_INSTANTIATE_FORWARD(float, float)
RFA_INSTANTIATE_FORWARD(bf16_t, bf16_t)
RFA_INSTANTIATE_FORWARD(bf16_t, float)
RFA_INSTANTIATE_FORWARD(fp16_t, fp16_t)
RFA_INSTANTIATE_FORWARD(fp16_t, float)
#undef RFA_INSTANTIATE_FORWARD

}  // namespace kernels
}  // namespace rfa
