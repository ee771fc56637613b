// SPDX-License-Identifier: BSD-3-Clause
// Row conversions between storage and the fp32 tile buffers. A row of a bshd tensor (d values
// of one token and head) is contiguous, so packing goes row by row through plain pointers,
// which the compiler vectorizes; per-element 4-D view indexing costs more than the products.
#pragma once

#include <Kokkos_Core.hpp>

#include <cstddef>

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

/// Asks for the cache lines of `bytes` bytes from `first` (a hint: nothing where the compiler
/// has no prefetch builtin). `locality` is __builtin_prefetch's: 3 keeps the lines in every
/// level, 2 towards L2.
template <int locality>
KOKKOS_INLINE_FUNCTION void prefetch_bytes(const void* first, std::size_t bytes) {
#if defined(__GNUC__) && !defined(__CUDA_ARCH__)
  const char* p = static_cast<const char*>(first);
  for (std::size_t b = 0; b < bytes; b += 64) __builtin_prefetch(p + b, 0, locality);
#else
  (void)first;
  (void)bytes;
#endif
}

/// Brings rows of a tile towards L2 a cache line at a time, spread evenly over the `steps`
/// step() calls of some other loop: the backward's dQ rows (added to after the product they
/// sit beside), and the next tile of the kernels' head-major copies. Rows of one head in bshd
/// storage are H * d values apart, so a tile's rows sit on different pages and the hardware
/// prefetchers (which stay within a page) start over on every row or two: unaided, the copy of
/// each tile waits on L3 for most of its rows. Asked for all at once the prefetches fill the
/// load buffers and stall the core instead.
class RowPrefetcher {
 public:
  RowPrefetcher() = default;
  /// rows rows of row_bytes bytes, the first at `first`, `stride_bytes` apart.
  RowPrefetcher(const void* first, std::ptrdiff_t stride_bytes, int rows, std::size_t row_bytes, int steps)
      : row_(static_cast<const char*>(first)),
        stride_(stride_bytes),
        lines_per_row_(int((row_bytes + 63) / 64)),
        left_(rows * lines_per_row_),
        lines_(left_),
        steps_(steps > 0 ? steps : 1) {}

  /// Asks for the lines due by this step (lines / steps of them, on average). The position
  /// advances by increments, not by dividing a line count: an integer division per step (tens
  /// of cycles on some cores) would show beside a micro-tile.
  void step() {
    if (left_ == 0) return;  // (owed_ stays bounded however many steps follow)
    owed_ += lines_;
    while (owed_ >= steps_ && left_ > 0) {
      owed_ -= steps_;
      ask_next();
    }
  }
  /// Asks for the lines not asked for yet (at the end of the loop that hid the others).
  void finish() {
    while (left_ > 0) ask_next();
  }
  /// Lines not asked for yet.
  int left() const { return left_; }

 private:
  void ask_next() {
    prefetch_bytes<2>(row_ + line_ * 64, 1);
    --left_;
    if (++line_ == lines_per_row_) {
      line_ = 0;
      row_ += stride_;
    }
  }

  const char* row_ = nullptr;  // the row of the next line asked for
  std::ptrdiff_t stride_ = 0;
  int lines_per_row_ = 0;
  int line_ = 0;   // its line within the row
  int left_ = 0;   // lines not asked for yet
  int lines_ = 0;  // lines in all
  int steps_ = 1;
  int owed_ = 0;  // steps taken times lines, less steps times lines asked for
};

/// dst[x] += src[x], for the fp32 accumulators of the ring.
KOKKOS_INLINE_FUNCTION void add_row(const float* src, float* dst, int n) {
  for (int x = 0; x < n; ++x) dst[x] += src[x];
}

}  // namespace kernels
}  // namespace rfa
