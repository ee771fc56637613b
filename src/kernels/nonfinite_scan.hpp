// SPDX-License-Identifier: BSD-3-Clause
// Finding NaN and infinity in a tensor where it lives (host or device memory), for the value
// checks of the C API (options.check_values): one read of every element, a min-reduction of
// the flat index, no copy. Elements are tested on their bits, so 16-bit storage needs no
// conversion.
#pragma once

#include <Kokkos_Core.hpp>
#include <cstdint>
#include <limits>

#include "core/dtype.hpp"
#include "kernels/host_dispatch_lock.hpp"

namespace rfa {
namespace kernels {

/// The exponent bits of a storage type (all ones: NaN or infinity) and the bits of -infinity.
template <class T>
struct NonfiniteBits;
template <>
struct NonfiniteBits<float> {
  static constexpr std::uint32_t exponent = 0x7f800000u, minus_infinity = 0xff800000u;
};
template <>
struct NonfiniteBits<bf16_t> {
  static constexpr std::uint32_t exponent = 0x7f80u, minus_infinity = 0xff80u;
};
template <>
struct NonfiniteBits<fp16_t> {
  static constexpr std::uint32_t exponent = 0x7c00u, minus_infinity = 0xfc00u;
};

KOKKOS_INLINE_FUNCTION std::uint32_t storage_bits(float x) { return float_bits(x); }
KOKKOS_INLINE_FUNCTION std::uint32_t storage_bits(bf16_t x) { return x.bits; }
KOKKOS_INLINE_FUNCTION std::uint32_t storage_bits(fp16_t x) { return x.bits; }

/// first_nonfinite's reduction: the lowest index of a NaN or infinite element. A functor, not a
/// KOKKOS_LAMBDA: this template is instantiated in several translation units, and nvcc's
/// __host__ __device__ lambdas must not be made in one unit's copy and copied in another's
/// (engine/sequence_transpose.hpp says why).
template <class T>
struct LowestNonfinite {
  const T* values;
  bool allow_minus_infinity;
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t i, std::int64_t& lowest) const {
    const std::uint32_t bits = storage_bits(values[i]);
    const bool nonfinite = (bits & NonfiniteBits<T>::exponent) == NonfiniteBits<T>::exponent &&
                           !(allow_minus_infinity && bits == NonfiniteBits<T>::minus_infinity);
    if (nonfinite && i < lowest) lowest = i;
  }
};

/// The flat index of the first of `count` elements at `values` (in `Space`'s memory) that is NaN
/// or infinite, or -1 when there is none. With `allow_minus_infinity`, -inf counts as finite (a
/// log-sum-exp of a row that sees no key).
template <class T, class Space>
std::int64_t first_nonfinite(const T* values, std::int64_t count, bool allow_minus_infinity) {
  using Exec = typename Space::execution_space;
  std::int64_t first = std::numeric_limits<std::int64_t>::max();
  const HostDispatchLock<Exec> lock;
  Kokkos::parallel_reduce("rfa::first_nonfinite", Kokkos::RangePolicy<Exec, Kokkos::IndexType<std::int64_t>>(0, count),
                          LowestNonfinite<T>{values, allow_minus_infinity}, Kokkos::Min<std::int64_t>(first));
  return first == std::numeric_limits<std::int64_t>::max() ? -1 : first;
}

}  // namespace kernels
}  // namespace rfa
