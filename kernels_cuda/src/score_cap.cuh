// SPDX-License-Identifier: BSD-3-Clause
// Soft-capped scores (rfa_cuda_attention_shape.softcap) for the sm_80 kernels. The kernels hold
// raw scores s = q . k and use scale * s through exp2(s * scale_log2 - m); a cap replaces s by
// (softcap / scale) tanh(scale s / softcap), whose scaled value is softcap * tanh(scale s /
// softcap), so the softmax code after it is the same with and without a cap. The backward
// multiplies dS by the cap's slope, 1 - tanh^2. Both come from one exponential per score
// (ScoreCap::tanh_and_slope), the slope keeping its relative precision where tanh rounds to +-1.
#pragma once

namespace rfa_cuda {
namespace detail {

struct ScoreCap {
  bool on;          // softcap > 0
  float into_tanh;  // scale / softcap
  float out_of;     // softcap / scale

  /// tanh(x), and its slope 1 - tanh^2(x) in `slope`. For |x| >= 0.625, from e = exp(-2|x|):
  /// tanh = sign(x) (1 - 2e / (1 + e)) and the slope 4e / (1 + e)^2, which keeps fp32's relative
  /// precision where tanh rounds to +-1 (1 - t^2 is 0 from |x| = 8.7 on) until e is subnormal
  /// (|x| near 44; 0 beyond, and at +-inf); below, x P(x^2) (the host's polynomial, simd::tanh:
  /// 1.1e-7 in fp32) and 1 - t^2 (t^2 < 0.31: no cancellation). An exponential, a division and
  /// seven multiply-adds, as tanhf costs; in the forward the slope's arithmetic is dead code.
  __device__ __forceinline__ static float tanh_and_slope(float x, float& slope) {
    const float u = x * x;
    float p = -5.704042501747608e-3f;
    p = fmaf(p, u, 2.0637862384319305e-2f);
    p = fmaf(p, u, -5.373915657401085e-2f);
    p = fmaf(p, u, 1.33314311504364e-1f);
    p = fmaf(p, u, -3.333328068256378e-1f);
    p = fmaf(p, u, 1.0f);
    const float near = x * p;
    const float e = exp2f(-2.8853900817779268f * fabsf(x));  // 2 log2(e); e in [0, 1]
    const float r = __fdividef(1.f, 1.f + e);                // the divisor in [1, 2]
    const bool is_near = u < 0.390625f;                      // |x| < 0.625; NaN: the far form, NaN
    slope = is_near ? fmaf(-near, near, 1.f) : 4.f * e * r * r;
    return is_near ? near : copysignf(fmaf(-2.f * e, r, 1.f), x);
  }

  /// The capped raw score of s; `slope` gets d(capped)/ds = 1 - tanh^2 (1 without a cap).
  __device__ __forceinline__ float apply(float s, float& slope) const {
    if (!on) {
      slope = 1.f;
      return s;
    }
    return out_of * tanh_and_slope(s * into_tanh, slope);
  }
  __device__ __forceinline__ float apply(float s) const {
    float unused;
    return on ? out_of * tanh_and_slope(s * into_tanh, unused) : s;
  }
};

// A thread's scores (kBlocks blocks of mma accumulators) capped in place where a cap is set. The
// cap is tested once around the loop, so that without one no branch stands at each score. Before
// the mask, whose -inf the cap would make finite.
template <int kBlocks>
__device__ __forceinline__ void cap_scores(const ScoreCap& cap, float (&s)[kBlocks][4]) {
  if (!cap.on) return;
#pragma unroll
  for (int nb = 0; nb < kBlocks; ++nb) {
#pragma unroll
    for (int e = 0; e < 4; ++e) s[nb][e] = cap.apply(s[nb][e]);
  }
}

// The backward's scores and dP before the mask: dp becomes dP - D, with row_term(nb, e) the row
// term D of element e of block nb; where a cap is set, the scores are capped and dP - D takes the
// cap's slope (dS = P (dP - D) slope once multiplied by P). One test of the cap around the loops.
template <int kBlocks, class RowTerm>
__device__ __forceinline__ void cap_scores_less_row_term(const ScoreCap& cap, float (&s)[kBlocks][4],
                                                         float (&dp)[kBlocks][4], const RowTerm& row_term) {
  if (cap.on) {
#pragma unroll
    for (int nb = 0; nb < kBlocks; ++nb) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        float slope;
        s[nb][e] = cap.apply(s[nb][e], slope);
        dp[nb][e] = (dp[nb][e] - row_term(nb, e)) * slope;
      }
    }
  } else {
#pragma unroll
    for (int nb = 0; nb < kBlocks; ++nb) {
#pragma unroll
      for (int e = 0; e < 4; ++e) dp[nb][e] -= row_term(nb, e);
    }
  }
}

}  // namespace detail
}  // namespace rfa_cuda
