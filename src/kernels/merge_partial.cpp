// SPDX-License-Identifier: BSD-3-Clause
// The online-softmax merge of ring partials and the fp32 -> storage narrowing.
#include <cmath>

#include "kernels/flash_attention.hpp"
#include "kernels/tensor_checks.hpp"

namespace rfa {
namespace kernels {
namespace {
using Exec = Kokkos::DefaultHostExecutionSpace;
using Range = Kokkos::RangePolicy<Exec, Kokkos::IndexType<std::int64_t>>;

/// 1 / (1 + e^-x), with e^-x formed only where it cannot overflow (an overflow is exact here, the
/// weight 0, but raises the flag a program may trap: gfortran's -ffpe-trap=overflow).
inline float sigmoid(float x) {
  if (x >= 0.0f) return 1.0f / (1.0f + std::exp(-x));
  const float e = std::exp(x);
  return e / (1.0f + e);
}
/// The block's weight in the merge, sigmoid(bl - l), the difference formed only where it is
/// not far past exp's range: lses 2e38 apart would overflow it (raising the flag).
inline float block_weight(float l, float bl) {
  if (bl > l + 128.0f) return 1.0f;
  if (l > bl + 128.0f) return 0.0f;
  return sigmoid(bl - l);
}
/// log(e^a + e^b) = hi + log(1 + e^(lo - hi)), without overflow: e^(lo - hi) <= 1, formed only
/// where it is above fp32's least (lses 2e38 apart would overflow lo - hi to -inf).
inline float log_add_exp(float a, float b) {
  const float hi = a > b ? a : b, lo = a > b ? b : a;
  return lo < hi - 128.0f ? hi : hi + std::log1p(std::exp(lo - hi));
}
}  // namespace

void merge_partial(Tensor4<float> out, Tensor3<float> lse, Tensor4<const float> block_out,
                   Tensor3<const float> block_lse) {
  const std::int64_t B = out.extent(0), S = out.extent(1), H = out.extent(2), D = out.extent(3);
  check_tensor(lse, "lse", B, H, S);
  check_tensor(block_out, "block_out", B, S, H, D);
  check_tensor(block_lse, "block_lse", B, H, S);
  Kokkos::parallel_for("rfa::merge_partial", Range(0, B * S * H), [=](std::int64_t idx) {
    const std::int64_t h = idx % H, i = (idx / H) % S, b = idx / (H * S);
    const float bl = block_lse(b, h, i);
    const float l = lse(b, h, i);
    if (bl == -INFINITY) return;  // the block saw nothing for this row
    float* o = &out(b, i, h, 0);
    const float* bo = &block_out(b, i, h, 0);
    if (l == -INFINITY) {  // the first block this row sees
      for (std::int64_t x = 0; x < D; ++x) o[x] = bo[x];
      lse(b, h, i) = bl;
      return;
    }
    const float w = block_weight(l, bl);
    for (std::int64_t x = 0; x < D; ++x) o[x] -= w * (o[x] - bo[x]);
    lse(b, h, i) = log_add_exp(l, bl);
  });
  Exec().fence();
}

template <class T>
void narrow(Tensor4<const float> from, Tensor4<T> to) {
  require(from.size() == to.size(), "narrow: element counts differ (", from.size(), " vs ", to.size(), ")");
  const float* src = from.data();
  T* dst = to.data();
  Kokkos::parallel_for("rfa::narrow", Range(0, std::int64_t(from.size())),
                       [=](std::int64_t i) { from_float(src[i], dst[i]); });
  Exec().fence();
}

template void narrow<float>(Tensor4<const float>, Tensor4<float>);
template void narrow<bf16_t>(Tensor4<const float>, Tensor4<bf16_t>);
template void narrow<fp16_t>(Tensor4<const float>, Tensor4<fp16_t>);

}  // namespace kernels
}  // namespace rfa
