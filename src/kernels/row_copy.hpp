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

/// Brings the rows of the next tile towards L2 a cache line at a time, spread over the work on
/// the current tile. Rows of one head are H * d values apart, so a tile's rows sit on
/// different pages and the hardware prefetchers (which stay within a page) start over on
/// every row or two: unaided, the copy of each tile waits on L3 for most of its rows. Asked
/// for all at once the prefetches fill the load buffers and stall the core instead, hence one
/// or two lines per step() of some loop that has ALU work to hide them behind.
class RowPrefetcher {
 public:
  RowPrefetcher() = default;
  /// rows rows of row_bytes bytes, the first at `first`, `stride_bytes` apart.
  RowPrefetcher(const void* first, std::ptrdiff_t stride_bytes, int rows, std::size_t row_bytes)
      : row_(static_cast<const char*>(first)),
        stride_(stride_bytes),
        lines_per_row_(int((row_bytes + 63) / 64)),
        left_(rows * lines_per_row_) {}

  /// The position advances by increments, not by dividing a line count: step() runs once per
  /// vector of softmax work, where an integer division (tens of cycles on some cores) showed.
  /// Only the hint depends on the compiler: the count always advances, so finish() ends
  /// where there is no prefetch builtin.
  void step() {
    if (left_ == 0) return;
#if defined(__GNUC__) && !defined(__CUDA_ARCH__)
    __builtin_prefetch(row_ + line_ * 64, 0, 2);
#endif
    --left_;
    if (++line_ == lines_per_row_) {
      line_ = 0;
      row_ += stride_;
    }
  }
  /// Asks for the lines not asked for yet (at the end of the loop that hid the others).
  void finish() {
    while (left_ > 0) step();
  }

 private:
  const char* row_ = nullptr;  // the row of the next line asked for
  std::ptrdiff_t stride_ = 0;
  int lines_per_row_ = 0;
  int line_ = 0;  // its line within the row
  int left_ = 0;  // lines not asked for yet
};

/// dst[x] += src[x], for the fp32 accumulators of the ring.
KOKKOS_INLINE_FUNCTION void add_row(const float* src, float* dst, int n) {
  for (int x = 0; x < n; ++x) dst[x] += src[x];
}

}  // namespace kernels
}  // namespace rfa
