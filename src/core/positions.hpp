// SPDX-License-Identifier: BSD-3-Clause
// Global token positions of the rows a rank holds (docs/architecture.md §4). Every layout is described
// by a few affine segments (one or two for the fixed layouts, up to one per chunk for the
// balanced one), so one masking rule serves every layout alike: the kernels never know which
// layout produced the map.
#pragma once

#include <Kokkos_Core.hpp>
#include <cstdint>
#include <string>

namespace rfa {

/// Positions start, start+stride, ..., start+(length-1)*stride; stride >= 1.
struct Segment {
  std::int64_t start = 0;
  std::int64_t stride = 1;
  std::int64_t length = 0;
};

struct PositionMap {
  static constexpr int kMaxSegments = 8;
  Segment seg[kMaxSegments];
  int count = 0;

  KOKKOS_INLINE_FUNCTION static PositionMap contiguous(std::int64_t start, std::int64_t length) {
    PositionMap m;
    m.seg[0] = Segment{start, 1, length};
    m.count = 1;
    return m;
  }
  KOKKOS_INLINE_FUNCTION static PositionMap one(Segment a) {
    PositionMap m;
    m.seg[0] = a;
    m.count = 1;
    return m;
  }
  KOKKOS_INLINE_FUNCTION static PositionMap two(Segment a, Segment b) {
    PositionMap m;
    m.seg[0] = a;
    m.seg[1] = b;
    m.count = 2;
    return m;
  }

  KOKKOS_INLINE_FUNCTION std::int64_t length() const {
    std::int64_t n = 0;
    for (int s = 0; s < count; ++s) n += seg[s].length;
    return n;
  }

  /// Global position of local row i (0 <= i < length()).
  KOKKOS_INLINE_FUNCTION std::int64_t operator()(std::int64_t i) const {
    for (int s = 0; s + 1 < count; ++s) {
      if (i < seg[s].length) return seg[s].start + i * seg[s].stride;
      i -= seg[s].length;
    }
    const Segment& last = seg[count - 1];
    return last.start + i * last.stride;
  }

  /// Smallest and largest global position among local rows [i0, i1), i0 < i1 <= length().
  /// Each segment is increasing, so only the ends of its overlap with the range matter.
  KOKKOS_INLINE_FUNCTION void range(std::int64_t i0, std::int64_t i1, std::int64_t& lo, std::int64_t& hi) const {
    lo = INT64_MAX;
    hi = INT64_MIN;
    std::int64_t base = 0;
    for (int s = 0; s < count; ++s) {
      const std::int64_t a = i0 > base ? i0 : base;
      const std::int64_t e = base + seg[s].length;
      const std::int64_t b = i1 < e ? i1 : e;
      if (a < b) {
        const std::int64_t first = seg[s].start + (a - base) * seg[s].stride;
        const std::int64_t last = seg[s].start + (b - 1 - base) * seg[s].stride;
        if (first < lo) lo = first;
        if (last > hi) hi = last;
      }
      base = e;
    }
  }
};

/// Whether two maps list the same segments (so the same rows, in the same order).
inline bool same_positions(const PositionMap& a, const PositionMap& b) {
  if (a.count != b.count) return false;
  for (int s = 0; s < a.count; ++s)
    if (a.seg[s].start != b.seg[s].start || a.seg[s].stride != b.seg[s].stride || a.seg[s].length != b.seg[s].length)
      return false;
  return true;
}

/// Throws rfa::Error unless the map is well formed and covers exactly `expected_length` rows.
void validate_position_map(const PositionMap& map, std::int64_t expected_length, const char* what);

}  // namespace rfa
