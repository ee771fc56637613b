// SPDX-License-Identifier: BSD-3-Clause
#include "core/view_limits.hpp"

#include <Kokkos_Core.hpp>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/text_stream.hpp"

namespace rfa {
namespace {

// Builds an unmanaged View of the shape over a dummy pointer (nothing is dereferenced) and
// reads back its extents and strides: they equal the exact ones only if the View can index
// the shape.
template <class View, class... Extents>
bool view_indexes(const std::vector<std::int64_t>& want, Extents... extents) {
  static float dummy;
  View probe(&dummy, std::size_t(extents)...);
  std::int64_t stride = 1;
  for (int r = int(View::rank) - 1; r >= 0; --r) {
    if (std::int64_t(probe.extent(r)) != want[r]) return false;
    std::size_t got[8] = {};
    probe.stride(got);
    if (want[r] > 1 && std::int64_t(got[r]) != stride) return false;
    stride *= want[r];
  }
  return true;
}

std::string shape_text(const std::vector<std::int64_t>& extents) {
  TextStream text;
  for (std::size_t i = 0; i < extents.size(); ++i) text << (i ? "," : "") << extents[i];
  return text.str();
}

// The last element of a View of 2^32 elements, indexed with int, lies at offset -1 on Kokkos
// 5.2.2: the offset is computed in int.
constexpr bool kOffsetsInIndexType =
#if KOKKOS_VERSION >= 50000 && !defined(KOKKOS_ENABLE_IMPL_VIEW_LEGACY)
    true;
#else
    false;
#endif

}  // namespace

bool view_offsets_in_index_type() { return kOffsetsInIndexType; }

void require_view_extents(const char* tensor, std::initializer_list<std::int64_t> extents) {
  const std::vector<std::int64_t> e(extents);
  for (std::int64_t x : e)
    if (x <= 0) return;  // empty or invalid shapes are the shape checks' business
  using Unmanaged = Kokkos::MemoryTraits<Kokkos::Unmanaged>;
  std::int64_t elements = 1;
  for (std::int64_t x : e) elements = elements > (std::int64_t(1) << 62) / x ? (std::int64_t(1) << 62) : elements * x;
  if (kOffsetsInIndexType && elements >= (std::int64_t(1) << 31)) {
    fail(RFA_ERROR_UNSUPPORTED, "tensor '", tensor, "' of shape [", shape_text(e),
         "] holds 2^31 elements or more: ", "the Kokkos Views of this build (Kokkos ", KOKKOS_VERSION / 10000, ".",
         KOKKOS_VERSION / 100 % 100,
         ") compute an element's offset in the type of its indices, which rfa's kernels keep in 32 bits: spread ",
         "the sequence over more ranks, or call rfa on fewer heads at a time");
  }
  bool ok = false;
  if (e.size() == 3)
    ok = view_indexes<Kokkos::View<float***, Kokkos::LayoutRight, Kokkos::HostSpace, Unmanaged>>(e, e[0], e[1], e[2]);
  else if (e.size() == 4)
    ok = view_indexes<Kokkos::View<float****, Kokkos::LayoutRight, Kokkos::HostSpace, Unmanaged>>(e, e[0], e[1], e[2],
                                                                                                  e[3]);
  else
    fail(RFA_ERROR_INTERNAL, "require_view_extents: rank ", e.size(), " is not probed");
  if (ok) return;
  fail(RFA_ERROR_UNSUPPORTED, "tensor '", tensor, "' of shape [", shape_text(e),
       "] is too large for the Kokkos Views of this build, which index each extent and each ",
       "inner stride with 32-bit integers (each must stay below 2^32 = 4294967296): spread the ",
       "sequence over more ranks, or call rfa on fewer heads at a time");
}

}  // namespace rfa
