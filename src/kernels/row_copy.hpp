// SPDX-License-Identifier: BSD-3-Clause
// Row conversions between storage and the fp32 tile buffers. A row of a bshd tensor (d values
// of one token and head) is contiguous, so packing goes row by row through plain pointers,
// which the compiler vectorizes; per-element 4-D view indexing costs more than the products.
#pragma once

#include <Kokkos_Core.hpp>

#include "core/dtype.hpp"

namespace rfa {
namespace kernels {

template <class T>
KOKKOS_INLINE_FUNCTION void load_row(const T* src, float* dst, int n, float scale = 1.0f) {
  for (int x = 0; x < n; ++x) dst[x] = to_float(src[x]) * scale;
}

KOKKOS_INLINE_FUNCTION void zero_row(float* dst, int n) {
  for (int x = 0; x < n; ++x) dst[x] = 0.0f;
}

/// dst[x] += src[x], for the fp32 accumulators of the ring.
KOKKOS_INLINE_FUNCTION void add_row(const float* src, float* dst, int n) {
  for (int x = 0; x < n; ++x) dst[x] += src[x];
}

}  // namespace kernels
}  // namespace rfa
