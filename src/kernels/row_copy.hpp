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

/// Brings rows of a tile towards L2 a cache line at a time, spread over other work (the
/// backward's dQ rows, added to after the product they sit beside). Rows of one head are H * d values apart, so a tile's rows sit on
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
  /// Lines not asked for yet.
  int left() const { return left_; }

 private:
  const char* row_ = nullptr;  // the row of the next line asked for
  std::ptrdiff_t stride_ = 0;
  int lines_per_row_ = 0;
  int line_ = 0;  // its line within the row
  int left_ = 0;  // lines not asked for yet
};

/// Converts the rows of a tile into fp32 scratch a few at a time, spread evenly over the `steps`
/// step() calls of some other loop (a product that does not touch that scratch), and asks for
/// each row's lines kAhead rows before converting it. In bshd storage (docs/architecture.md §2)
/// the rows of one head are H * d values apart, often a multiple of 2 KiB, so their lines fall
/// into a quarter of L2's sets: prefetched a whole tile ahead they evict each other (and the
/// scratch) before use, and copied all at once at a tile's start they wait on L3. Converted
/// just in time beside a product's FMAs, the misses overlap with the arithmetic.
template <class T>
class SpreadRowLoad {
 public:
  SpreadRowLoad() = default;
  /// rows rows of d values, the first at `first`, `stride` elements apart, into dst (ld floats
  /// apart), then zero rows up to rows_padded.
  SpreadRowLoad(const T* first, std::ptrdiff_t stride, int rows, int rows_padded, int d, float* dst, int ld,
                int steps, float scale = 1.0f)
      : src_(first),
        stride_(stride),
        rows_(rows),
        rows_padded_(rows_padded),
        d_(d),
        dst_(dst),
        ld_(ld),
        steps_(steps > 0 ? steps : 1),
        scale_(scale) {
    for (int r = 0; r < kAhead && r < rows_; ++r) prefetch_row(r);
  }

  /// Converts the rows due by this step (rows_padded / steps of them, on average).
  void step() {
    owed_ += rows_padded_;
    while (owed_ >= steps_ && next_ < rows_padded_) {
      owed_ -= steps_;
      convert_next();
    }
  }
  /// Converts what is left.
  void finish() {
    while (next_ < rows_padded_) convert_next();
  }

 private:
  // Rows asked for ahead of the one converted: a row goes in every one to three micro-tiles
  // (~600 cycles each); on a shared Zen 3 VM 4 rows ahead made the forward ~8% faster than 2,
  // 8 and 16 no faster than 4, and none at all ~20% slower (perf/RESULTS.md, 2026-11-25).
  static constexpr int kAhead = 4;

  void prefetch_row(int r) const {
#if defined(__GNUC__) && !defined(__CUDA_ARCH__)
    const char* row = reinterpret_cast<const char*>(src_ + r * stride_);
    for (std::size_t b = 0; b < std::size_t(d_) * sizeof(T); b += 64) __builtin_prefetch(row + b, 0, 3);
#else
    (void)r;
#endif
  }
  void convert_next() {
    if (next_ + kAhead < rows_) prefetch_row(next_ + kAhead);
    if (next_ < rows_)
      load_row(src_ + next_ * stride_, dst_ + next_ * ld_, d_, scale_);
    else
      zero_row(dst_ + next_ * ld_, d_);
    ++next_;
  }

  const T* src_ = nullptr;
  std::ptrdiff_t stride_ = 0;
  int rows_ = 0, rows_padded_ = 0, d_ = 0;
  float* dst_ = nullptr;
  std::ptrdiff_t ld_ = 0;
  int steps_ = 1;
  float scale_ = 1.0f;
  int next_ = 0;  // the next row to convert
  int owed_ = 0;  // steps taken times rows_padded, less steps times rows converted
};

/// dst[x] += src[x], for the fp32 accumulators of the ring.
KOKKOS_INLINE_FUNCTION void add_row(const float* src, float* dst, int n) {
  for (int x = 0; x < n; ++x) dst[x] += src[x];
}

}  // namespace kernels
}  // namespace rfa
