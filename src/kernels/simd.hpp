// SPDX-License-Identifier: BSD-3-Clause
// An 8-lane fp32 vector for the host kernels. With GCC/Clang on the host it is a native
// vector (AVX2: one ymm register; narrower ISAs split it), so the micro-kernels compile to
// FMAs on whole registers without intrinsics tied to one ISA. Elsewhere (a device compiler,
// or an unknown compiler) it is eight scalars, which keeps the same kernels compilable for
// any Kokkos execution space.
#pragma once

#include <Kokkos_Core.hpp>
#include <cmath>
#include <cstddef>
#include <cstdint>
#if defined(__AVX__) && defined(__GNUC__) && !defined(__CUDACC__)
#include <immintrin.h>
#endif

// A build may force the portable lanes with -DRFA_NATIVE_VECTORS=0; the test suite does, to
// check on the host the code path device compilers get. Its sources that call the kernels only
// through flash_attention.hpp are compiled once for both builds, with RFA_VECTOR_NEUTRAL
// defined (tests/kernels/CMakeLists.txt): code that changes with the lanes must not reach them.
#ifdef RFA_VECTOR_NEUTRAL
#error "kernels/simd.hpp changes with RFA_NATIVE_VECTORS: compile this source once per kernel build"
#endif
#ifndef RFA_NATIVE_VECTORS
#if defined(__GNUC__) && !defined(__CUDACC__) && !defined(__HIPCC__) && !defined(__SYCL_DEVICE_ONLY__)
#define RFA_NATIVE_VECTORS 1
#else
#define RFA_NATIVE_VECTORS 0
#endif
#endif

namespace rfa {
namespace simd {

constexpr int kLanes = 8;
/// 1.5 * 2^23 + 127: adding it to x in [-127, 128] rounds x to the nearest integer n and leaves
/// n + 127 in the low bits of the sum's mantissa (exp2's range reduction).
constexpr float kExp2Shift = 12583039.0f;

#if RFA_NATIVE_VECTORS
typedef float f8 __attribute__((vector_size(32)));
typedef std::int32_t i8 __attribute__((vector_size(32)));

inline f8 load(const float* p) {
  f8 v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}
inline void store(float* p, f8 v) { __builtin_memcpy(p, &v, sizeof v); }
inline f8 broadcast(float x) { return f8{x, x, x, x, x, x, x, x}; }
inline f8 fma(f8 a, f8 b, f8 c) { return a * b + c; }  // contracted: -ffp-contract=fast
#if defined(__AVX__)
// One vmaxps (same lanes, NaN included, as the expression below): GCC 12 makes the
// expression a compare and a blend, two operations where the softmax counts every one.
inline f8 max(f8 a, f8 b) {
  __m256 x, y;
  __builtin_memcpy(&x, &a, sizeof x);
  __builtin_memcpy(&y, &b, sizeof y);
  const __m256 m = _mm256_max_ps(x, y);
  f8 r;
  __builtin_memcpy(&r, &m, sizeof r);
  return r;
}
#else
inline f8 max(f8 a, f8 b) { return a > b ? a : b; }
#endif
inline float reduce_add(f8 v) {
  // Pairwise, so the result does not depend on accumulated rounding order across lanes.
  return ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7]));
}
/// 2^n from s = n + kExp2Shift (see exp2): the low bits of s's mantissa hold n + 127, the
/// biased exponent, and shifting them into the exponent field leaves 2^n (0 for n = -127).
inline f8 pow2_from_shifted(f8 s) {
  i8 bits;
  __builtin_memcpy(&bits, &s, sizeof bits);
  bits = bits << 23;
  f8 r;
  __builtin_memcpy(&r, &bits, sizeof r);
  return r;
}
// The widest native vector the build targets, for the loops that may run wider than 8 lanes
// (the forward's softmax): 16 lanes (one zmm register) where the compiler targets AVX-512.
#if defined(__AVX512F__)
typedef float f16 __attribute__((vector_size(64)));
typedef f16 wide;
constexpr int kWideLanes = 16;

inline f16 max(f16 a, f16 b) { return a > b ? a : b; }
inline f16 fma(f16 a, f16 b, f16 c) { return a * b + c; }
/// Lane 0 of a tree reduction of the 16 lanes (four shuffles: a loop of 16 dependent scalar
/// steps per row costs more than the row's exponentials in the AMX kernels' row softmax).
template <class Op>
inline float reduce16(f16 v, Op op) {
  v = op(v, __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7));
  v = op(v, __builtin_shufflevector(v, v, 4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11));
  v = op(v, __builtin_shufflevector(v, v, 2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13));
  v = op(v, __builtin_shufflevector(v, v, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14));
  return v[0];
}
inline float reduce_max(f16 v) {
  return reduce16(v, [](f16 a, f16 b) { return max(a, b); });
}
inline float reduce_add(f16 v) {
  return reduce16(v, [](f16 a, f16 b) { return a + b; });
}
#else
typedef f8 wide;
constexpr int kWideLanes = kLanes;
#endif

/// load/broadcast/store for either vector type: the type is not deducible from a float.
template <class V>
inline V load_as(const float* p) {
  V v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}
template <class V>
inline V splat(float x);
// Brace lists: a lane-by-lane loop compiles to one masked broadcast per lane.
template <>
inline f8 splat<f8>(float x) {
  return f8{x, x, x, x, x, x, x, x};
}
#if defined(__AVX512F__)
template <>
inline f16 splat<f16>(float x) {
  return f16{x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x};
}
#endif
template <class V>
inline void store_as(float* p, V v) {
  __builtin_memcpy(p, &v, sizeof v);
}
/// The lanes of `below` where x < bound, of `otherwise` elsewhere.
template <class V>
inline V select_below(V x, float bound, V below, V otherwise) {
  return x < splat<V>(bound) ? below : otherwise;
}
#else
struct f8 {
  float v[kLanes];
  KOKKOS_INLINE_FUNCTION float& operator[](int i) { return v[i]; }
  KOKKOS_INLINE_FUNCTION float operator[](int i) const { return v[i]; }
};
#define RFA_SIMD_LANEWISE(expr)                     \
  f8 r;                                             \
  for (int i = 0; i < kLanes; ++i) r.v[i] = (expr); \
  return r
KOKKOS_INLINE_FUNCTION f8 load(const float* p) { RFA_SIMD_LANEWISE(p[i]); }
KOKKOS_INLINE_FUNCTION void store(float* p, f8 v) {
  for (int i = 0; i < kLanes; ++i) p[i] = v.v[i];
}
KOKKOS_INLINE_FUNCTION f8 broadcast(float x) { RFA_SIMD_LANEWISE(x); }
KOKKOS_INLINE_FUNCTION f8 fma(f8 a, f8 b, f8 c) { RFA_SIMD_LANEWISE(a.v[i] * b.v[i] + c.v[i]); }
KOKKOS_INLINE_FUNCTION f8 max(f8 a, f8 b) { RFA_SIMD_LANEWISE(a.v[i] > b.v[i] ? a.v[i] : b.v[i]); }
KOKKOS_INLINE_FUNCTION f8 operator+(f8 a, f8 b) { RFA_SIMD_LANEWISE(a.v[i] + b.v[i]); }
KOKKOS_INLINE_FUNCTION f8 operator-(f8 a, f8 b) { RFA_SIMD_LANEWISE(a.v[i] - b.v[i]); }
KOKKOS_INLINE_FUNCTION f8 operator*(f8 a, f8 b) { RFA_SIMD_LANEWISE(a.v[i] * b.v[i]); }
KOKKOS_INLINE_FUNCTION f8 operator/(f8 a, f8 b) { RFA_SIMD_LANEWISE(a.v[i] / b.v[i]); }
/// The lanes of `below` where x < bound, of `otherwise` elsewhere.
KOKKOS_INLINE_FUNCTION f8 select_below(f8 x, float bound, f8 below, f8 otherwise) {
  RFA_SIMD_LANEWISE(x.v[i] < bound ? below.v[i] : otherwise.v[i]);
}
KOKKOS_INLINE_FUNCTION float reduce_add(f8 v) {
  return ((v.v[0] + v.v[1]) + (v.v[2] + v.v[3])) + ((v.v[4] + v.v[5]) + (v.v[6] + v.v[7]));
}
KOKKOS_INLINE_FUNCTION f8 pow2_from_shifted(f8 s) {
  f8 r;
  for (int i = 0; i < kLanes; ++i) {
    const float n = s.v[i] - kExp2Shift;  // an integer, exactly (see exp2)
    r.v[i] = n <= -127.0f ? 0.0f : ldexpf(1.0f, int(n));
  }
  return r;
}
#undef RFA_SIMD_LANEWISE
typedef f8 wide;
constexpr int kWideLanes = kLanes;
template <class V>
KOKKOS_INLINE_FUNCTION V load_as(const float* p) {
  return load(p);
}
template <class V>
KOKKOS_INLINE_FUNCTION V splat(float x) {
  return broadcast(x);
}
template <class V>
KOKKOS_INLINE_FUNCTION void store_as(float* p, V v) {
  store(p, v);
}
#endif

/// 2^f for |f| <= 1/2: a degree-5 polynomial, minimax for the relative error (below 1e-7,
/// fp32's own rounding is 6e-8) with its constant term held at 1 so that 2^0 is exactly 1.
/// A degree-6 polynomial would cost a multiply-add more per score for accuracy fp32 cannot hold.
template <class V>
KOKKOS_INLINE_FUNCTION V exp2_reduced(V f) {
  V p = splat<V>(1.3264708686619997e-3f);
  p = fma(p, f, splat<V>(9.671511128544807e-3f));
  p = fma(p, f, splat<V>(5.550733953714371e-2f));
  p = fma(p, f, splat<V>(2.4022242426872253e-1f));
  p = fma(p, f, splat<V>(6.931470036506653e-1f));
  return fma(p, f, splat<V>(1.0f));
}

/// 2^x for x <= 127: relative error below 3e-7 where 2^x is a normal float (x >= -126),
/// exactly 0 below -126.5 (so -inf, a masked score, gives 0), a subnormal or 0 in between.
/// x = n + f with n = round(x), |f| <= 1/2, by one add of kExp2Shift, which also yields 2^n's
/// bits: ten vector operations, every one of which the softmax pays per score.
template <class V>
KOKKOS_INLINE_FUNCTION V exp2(V x) {
  const V clamped = max(x, splat<V>(-127.0f));
  const V shifted = clamped + splat<V>(kExp2Shift);
  const V f = clamped - (shifted - splat<V>(kExp2Shift));
  return exp2_reduced(f) * pow2_from_shifted(shifted);
}

#if RFA_NATIVE_VECTORS && defined(__AVX__)
/// The same function on 8 lanes where AVX rounds to an integer directly (vroundps, to nearest
/// whatever the rounding mode), as many operations: the shift's add above rounds as the mode
/// says, which under a directed mode (a host thread's fesetround) leaves |f| up to 1, where the
/// polynomial is 1.7e-4 off; n + kExp2Shift is exact in every mode. The same bits as the
/// template's under round-to-nearest (both round ties to even).
inline f8 exp2(f8 x) {
  const f8 clamped = max(x, splat<f8>(-127.0f));
  __m256 c;
  __builtin_memcpy(&c, &clamped, sizeof c);
  const __m256 rounded = _mm256_round_ps(c, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  f8 n;
  __builtin_memcpy(&n, &rounded, sizeof n);
  return exp2_reduced(clamped - n) * pow2_from_shifted(n + splat<f8>(kExp2Shift));
}
#endif

#if RFA_NATIVE_VECTORS && defined(__AVX512F__)
/// The same function on 16 lanes, where AVX-512 rounds to an integer (vrndscaleps, to nearest
/// whatever the rounding mode) and scales by 2^n (vscalefps, zeroing the lanes below -126)
/// directly. The lanes below -126 (-inf included) are masked off from the subtraction on: a
/// masked-off lane raises no floating-point exception, where -inf - -inf would raise "invalid"
/// (a SIGFPE in a program that traps it, as gfortran's -ffpe-trap=invalid does).
inline f16 exp2(f16 x) {
  __m512 xs;
  __builtin_memcpy(&xs, &x, sizeof xs);
  const __mmask16 in_range = _mm512_cmp_ps_mask(xs, _mm512_set1_ps(-126.0f), _CMP_GE_OQ);
  // The masked forms: the unmasked ones start from an "undefined" vector GCC 12 warns about.
  const __m512 n = _mm512_maskz_roundscale_ps(0xffff, xs, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 reduced = _mm512_maskz_sub_ps(in_range, xs, n);
  const f16 f = [&] {
    f16 v;
    __builtin_memcpy(&v, &reduced, sizeof v);
    return v;
  }();
  const f16 p = exp2_reduced(f);
  __m512 ps;
  __builtin_memcpy(&ps, &p, sizeof ps);
  const __m512 r = _mm512_maskz_scalef_ps(in_range, ps, n);
  f16 out;
  __builtin_memcpy(&out, &r, sizeof out);
  return out;
}
#endif

/// 2^x, at most 1: a softmax probability from its exponent x = s - lse (log2 units), which
/// the rounding of two large products can leave above 0 (scores of 1e6 and more), where a
/// probability above 1 would break every gradient's bound (and exp2 holds only x <= 127). A NaN
/// exponent reaches exp2 as it is (which gives 0 on the host).
template <class V>
KOKKOS_INLINE_FUNCTION V exp2_probability(V x) {
  const V zero = splat<V>(0.0f);
  return exp2(select_below(zero - x, 0.0f, zero, x));
}

/// tanh(x), relative error below 4e-7: x P(x^2) where |x| < 0.625 (P of degree 5, a least-squares
/// fit of tanh(x) / x on Chebyshev nodes: 1.1e-7 evaluated in fp32), elsewhere 1 - q with
/// q = 2 / (e + 1) and e = e^(2x) from exp2 (its argument clamped at 126, where the result is 1
/// in fp32; -inf gives -1). Also its derivative 1 - tanh^2(x) in `slope`, as e q^2 (that is,
/// 4 e / (e + 1)^2) from the same exponential: 1 - t^2 would be 0 wherever t rounds to +-1
/// (|x| > 8.7), where e q^2 keeps fp32's relative precision up to |x| = 43. From x = 126 / (2 log2
/// e), about 43.7, on (and at +inf and NaN) the clamp holds it at 2^-124; below about -43.7 it is
/// 0 (e underflows), as at -inf. Its relative error grows with |x| from the rounding of 2x log2
/// e: about 1e-6 at |x| = 10, 3e-6 at 40.
/// Soft-capped scores (AttentionParams::softcap) pass through tanh once per score, the backward's
/// through this form.
template <class V>
KOKKOS_INLINE_FUNCTION V tanh(V x, V& slope) {
  const V u = x * x;
  V p = splat<V>(-5.704042501747608e-3f);
  p = fma(p, u, splat<V>(2.0637862384319305e-2f));
  p = fma(p, u, splat<V>(-5.373915657401085e-2f));
  p = fma(p, u, splat<V>(1.33314311504364e-1f));
  p = fma(p, u, splat<V>(-3.333328068256378e-1f));
  p = fma(p, u, splat<V>(1.0f));
  const V y = x * splat<V>(2.0f * 1.4426950408889634f);
  const V e = exp2(splat<V>(0.0f) - max(splat<V>(0.0f) - y, splat<V>(-126.0f)));  // 2^min(y, 126)
  const V q = splat<V>(2.0f) / (e + splat<V>(1.0f));
  slope = (e * q) * q;  // e q first: e alone reaches 2^126, q^2 alone 2^-250
  return select_below(u, 0.390625f, x * p, splat<V>(1.0f) - q);
}

/// tanh(x) alone (the forward's cap): the form above, its slope unused.
template <class V>
KOKKOS_INLINE_FUNCTION V tanh(V x) {
  V unused;
  return tanh(x, unused);
}

/// Soft-capped scores (AttentionParams::softcap) in place: each of `rows` rows of `cols` floats (a
/// multiple of kWideLanes), rows `pitch` floats apart, becomes c tanh(s * inv), with c the cap in
/// the units the scores leave in and inv the factor from the scores' units to the cap's.
inline void cap_rows(float* scores, std::ptrdiff_t pitch, int rows, int cols, float c, float inv) {
  const wide vc = splat<wide>(c), vinv = splat<wide>(inv);
  for (int r = 0; r < rows; ++r) {
    float* row = scores + r * pitch;
    for (int j = 0; j < cols; j += kWideLanes) store_as(row + j, vc * tanh(load_as<wide>(row + j) * vinv));
  }
}

}  // namespace simd
}  // namespace rfa
