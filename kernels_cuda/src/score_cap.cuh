// SPDX-License-Identifier: BSD-3-Clause
// Soft-capped scores (rfa_cuda_attention_shape.softcap) for the sm_80 kernels. The kernels hold
// raw scores s = q . k and use scale * s through exp2(s * scale_log2 - m); a cap replaces s by
// (softcap / scale) tanh(scale s / softcap), whose scaled value is softcap * tanh(scale s /
// softcap), so the softmax code after it is the same with and without a cap. The backward
// multiplies dS by the cap's slope, 1 - tanh^2, computed from exp(-2|x|) (exact where tanh
// rounds to +-1).
#pragma once

namespace rfa_cuda {
namespace detail {

struct ScoreCap {
  bool on;          // softcap > 0
  float into_tanh;  // scale / softcap
  float out_of;     // softcap / scale

  /// The capped raw score of s; `slope` gets d(capped)/ds = 1 - tanh^2 (1 without a cap), as
  /// 4 e / (1 + e)^2 with e = exp(-2 |x|): 1 - t^2 is 0 wherever t rounds to +-1 (|x| > 8.7),
  /// where this keeps fp32's relative precision until e is subnormal (|x| near 44).
  __device__ __forceinline__ float apply(float s, float& slope) const {
    if (!on) {
      slope = 1.f;
      return s;
    }
    const float x = s * into_tanh;
    const float e = exp2f(-2.8853900817779268f * fabsf(x));  // 2 log2(e)
    const float r = 1.f / (1.f + e);
    slope = 4.f * e * r * r;
    return out_of * tanhf(x);
  }
  __device__ __forceinline__ float apply(float s) const { return on ? out_of * tanhf(s * into_tanh) : s; }
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
