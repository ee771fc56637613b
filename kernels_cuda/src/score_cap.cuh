// SPDX-License-Identifier: BSD-3-Clause
// Soft-capped scores (rfa_cuda_attention_shape.softcap) for the sm_80 kernels. The kernels hold
// raw scores s = q . k and use scale * s through exp2(s * scale_log2 - m); a cap replaces s by
// (softcap / scale) tanh(scale s / softcap), whose scaled value is softcap * tanh(scale s /
// softcap), so the softmax code after it is the same with and without a cap. The backward
// multiplies dS by the cap's slope, 1 - tanh^2.
#pragma once

namespace rfa_cuda {
namespace detail {

struct ScoreCap {
  bool on;          // softcap > 0
  float into_tanh;  // scale / softcap
  float out_of;     // softcap / scale

  /// The capped raw score of s; `slope` gets d(capped)/ds = 1 - tanh^2 (1 without a cap).
  __device__ __forceinline__ float apply(float s, float& slope) const {
    if (!on) {
      slope = 1.f;
      return s;
    }
    const float t = tanhf(s * into_tanh);
    slope = 1.f - t * t;
    return out_of * t;
  }
  __device__ __forceinline__ float apply(float s) const { return on ? out_of * tanhf(s * into_tanh) : s; }
};

}  // namespace detail
}  // namespace rfa_cuda
