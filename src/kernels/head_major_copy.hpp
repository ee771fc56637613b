// SPDX-License-Identifier: BSD-3-Clause
// The host kernels' fp32 head-major copies (docs/architecture.md §3): the forward's K and V, the
// backward's Q and dO, made once per call so that every tile is one contiguous block read in
// place rather than rows H * d values apart converted again by every tile that needs them.
#pragma once

#include <Kokkos_Core.hpp>
#include <cstdint>

#include "kernels/flash_attention.hpp"
#include "kernels/row_copy.hpp"
#include "kernels/scratch_carver.hpp"

namespace rfa {
namespace kernels {

/// Copies rows of two tensors of one shape but for their head dims (K and V, or Q and dO) into
/// fp32 buffers laid out [batch][head][row][pitch], each `a` row row_pitch of its head dim
/// apart and likewise `b`, in parallel: row i of a head's copy is the tensor's row
/// source_row(i), or zeros where that is `seq` or more (padding to whole tiles). `head_rows`
/// rows per (batch, head); the tensors' head count and head dims give the rest.
template <class Exec, class T, class SourceRow>
void copy_rows_head_major(const char* label, const Tensor4<const T>& a, const Tensor4<const T>& b, float* a_copy,
                          float* b_copy, std::int64_t head_rows, std::int64_t seq, SourceRow source_row) {
  const std::int64_t heads = std::int64_t(a.extent(2));
  const int da = int(a.extent(3)), db = int(b.extent(3));
  const int lda = row_pitch(da), ldb = row_pitch(db);
  const std::int64_t rows = std::int64_t(a.extent(0)) * heads * head_rows;
  Kokkos::parallel_for(label, Kokkos::RangePolicy<Exec, Kokkos::IndexType<std::int64_t>>(0, rows), [=](std::int64_t r) {
    const std::int64_t row = source_row(r % head_rows);
    const std::int64_t h = (r / head_rows) % heads;
    const std::int64_t batch = r / (head_rows * heads);
    if (row < seq) {
      load_row(&a(batch, row, h, 0), a_copy + r * lda, da);
      load_row(&b(batch, row, h, 0), b_copy + r * ldb, db);
    } else {
      zero_row(a_copy + r * lda, da);
      zero_row(b_copy + r * ldb, db);
    }
  });
  Exec().fence();
}

}  // namespace kernels
}  // namespace rfa
