// SPDX-License-Identifier: BSD-3-Clause
// Fill and copy of whole contiguous host tensors, by element count in 64 bits. Kokkos'
// deep_copy sizes these by the View's span, which Kokkos 3.4 computes in 32 bits for rank >= 3
// Views (a tensor of 2^32 elements has span 0 there; core/allocation.hpp), and every tensor
// the engine and kernels fill or copy is a contiguous row-major one.
#pragma once

#include <Kokkos_Core.hpp>
#include <cstdint>

#include "core/error.hpp"

namespace rfa {
namespace kernels {

using HostElements = Kokkos::RangePolicy<Kokkos::DefaultHostExecutionSpace, Kokkos::IndexType<std::int64_t>>;

/// Every element of `view` set to `value`.
template <class View>
void fill_elements(const View& view, typename View::non_const_value_type value) {
  auto* data = view.data();
  Kokkos::parallel_for("rfa::fill", HostElements(0, std::int64_t(view.size())),
                       [=](std::int64_t i) { data[i] = value; });
  Kokkos::DefaultHostExecutionSpace().fence();
}

/// `to` = `from`, element by element; the two must have the same extents.
template <class To, class From>
void copy_elements(const To& to, const From& from) {
  for (unsigned r = 0; r < To::rank; ++r)
    if (to.extent(r) != from.extent(r)) fail(RFA_ERROR_INTERNAL, "copy_elements: extents differ in dimension ", r);
  auto* dst = to.data();
  const auto* src = from.data();
  Kokkos::parallel_for("rfa::copy", HostElements(0, std::int64_t(to.size())), [=](std::int64_t i) { dst[i] = src[i]; });
  Kokkos::DefaultHostExecutionSpace().fence();
}

}  // namespace kernels
}  // namespace rfa
