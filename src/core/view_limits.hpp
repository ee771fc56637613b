// SPDX-License-Identifier: BSD-3-Clause
// Which tensor shapes a Kokkos View can index as rfa's kernels index it. Kokkos 3.4 (and the
// legacy Views of 4.x) keep each extent of a rank >= 3 View, and the strides of its inner
// dimensions, in 32-bit integers: [B][S][H][d] with S >= 2^32, or with S*H*d >= 2^32 per batch
// entry, would be indexed wrongly, silently. That limit is probed on the Kokkos rfa was built
// with rather than assumed. Kokkos 5's Views (built on mdspan) keep 64-bit extents and strides
// but compute an element's offset in the type of the indices, and the kernels index with int:
// there a View must hold fewer than 2^31 elements.
#pragma once

#include <cstdint>
#include <initializer_list>

namespace rfa {

/// Throws RFA_ERROR_UNSUPPORTED naming `tensor` and its shape when a row-major View of rank
/// extents.size() (3 or 4) cannot index every element of that shape.
void require_view_extents(const char* tensor, std::initializer_list<std::int64_t> extents);

/// Whether this build's Views compute offsets in the indices' type (Kokkos 5 without its legacy
/// Views), which limits each View to fewer than 2^31 elements.
bool view_offsets_in_index_type();

}  // namespace rfa
