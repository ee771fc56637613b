// SPDX-License-Identifier: BSD-3-Clause
#include "core/view_limits.hpp"

#include <Kokkos_Core.hpp>
#include <sstream>
#include <vector>

#include "core/error.hpp"

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

}  // namespace

void require_view_extents(const char* tensor, std::initializer_list<std::int64_t> extents) {
  const std::vector<std::int64_t> e(extents);
  for (std::int64_t x : e)
    if (x <= 0) return;  // empty or invalid shapes are the shape checks' business
  using Unmanaged = Kokkos::MemoryTraits<Kokkos::Unmanaged>;
  bool ok = false;
  if (e.size() == 3)
    ok = view_indexes<Kokkos::View<float***, Kokkos::LayoutRight, Kokkos::HostSpace, Unmanaged>>(e, e[0], e[1], e[2]);
  else if (e.size() == 4)
    ok = view_indexes<Kokkos::View<float****, Kokkos::LayoutRight, Kokkos::HostSpace, Unmanaged>>(e, e[0], e[1], e[2],
                                                                                                 e[3]);
  else
    fail(RFA_ERROR_INTERNAL, "require_view_extents: rank ", e.size(), " is not probed");
  if (ok) return;
  std::ostringstream shape;
  for (std::size_t i = 0; i < e.size(); ++i) shape << (i ? "," : "") << e[i];
  fail(RFA_ERROR_UNSUPPORTED, "tensor '", tensor, "' of shape [", shape.str(),
       "] is too large for the Kokkos Views of this build, which index each extent and each ",
       "inner stride with 32-bit integers (each must stay below 2^32 = 4294967296): spread the ",
       "sequence over more ranks, or call rfa on fewer heads at a time");
}

}  // namespace rfa
