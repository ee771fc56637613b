// SPDX-License-Identifier: BSD-3-Clause
// Every large buffer rfa allocates goes through here, for two reasons.
// (1) A failed allocation must become RFA_ERROR_OUT_OF_MEMORY naming the buffer and the bytes,
//     not Kokkos' std::runtime_error (which the C API could only call an internal error) or an
//     abort. allocate_bytes() converts it.
// (2) Kokkos 3.4 (and the legacy Views of 4.x) keep the extents of a rank >= 3 View in 32-bit
//     integers and compute its element count for the allocation in them too: a tensor of exactly
//     2^32 elements is allocated with 0 bytes and then written past its end. Tensors are therefore
//     carved from a 1-d byte View (64-bit length) whose size rfa computes itself; the View that
//     indexes it is unmanaged (see core/view_limits.hpp for which shapes it can index).
#pragma once

#include <Kokkos_Core.hpp>
#include <cstdint>
#include <string>

#include "core/view_limits.hpp"

namespace rfa {

/// "8589934592 bytes (8.0 GiB)": the exact count for logs, the rounded one for people.
std::string describe_bytes(std::int64_t bytes);

/// Throws rfa::Error(RFA_ERROR_OUT_OF_MEMORY) saying that `bytes` for `label` could not be
/// allocated in `space`, with the first line of what the allocator said.
[[noreturn]] void fail_out_of_memory(const std::string& label, std::int64_t bytes, const char* space,
                                     const std::string& allocator_said);

/// Product of extents in 64 bits; throws RFA_ERROR_INVALID_ARGUMENT naming `label` when a
/// negative extent is given or the byte count does not fit in int64.
std::int64_t checked_bytes(const std::string& label, std::int64_t element_size, std::int64_t e0, std::int64_t e1 = 1,
                           std::int64_t e2 = 1, std::int64_t e3 = 1);

/// An uninitialized buffer of `bytes` bytes in `Space`, labelled `label` for Kokkos' tools.
/// Throws RFA_ERROR_OUT_OF_MEMORY (label, bytes, space) when the allocator refuses.
template <class Space>
Kokkos::View<unsigned char*, Space> allocate_bytes(const std::string& label, std::int64_t bytes) {
  try {
    return Kokkos::View<unsigned char*, Space>(Kokkos::view_alloc(label, Kokkos::WithoutInitializing),
                                               std::size_t(bytes));
  } catch (const std::bad_alloc& e) {
    fail_out_of_memory(label, bytes, Space::name(), e.what());
  } catch (const std::runtime_error& e) {  // Kokkos reports a refused allocation this way
    fail_out_of_memory(label, bytes, Space::name(), e.what());
  }
}

/// Grows `buffer` to at least `bytes` (uninitialized; its contents are not kept), for buffers
/// kept from one call to the next: reallocated only when more is needed, the old buffer freed
/// before the new one comes. Throws as allocate_bytes().
template <class Space>
void grow_bytes(Kokkos::View<unsigned char*, Space>& buffer, const std::string& label, std::int64_t bytes) {
  if (std::int64_t(buffer.extent(0)) >= bytes) return;
  buffer = Kokkos::View<unsigned char*, Space>();
  buffer = allocate_bytes<Space>(label, bytes);
}

/// A row-major tensor View (unmanaged) over the front of `buffer`, which the caller keeps
/// alive. `buffer` must hold the tensor: allocate it with checked_bytes() of the same extents.
template <class TensorView, class Space, class... Extents>
TensorView view_over(const Kokkos::View<unsigned char*, Space>& buffer, Extents... extents) {
  using T = typename TensorView::value_type;
  return TensorView(reinterpret_cast<T*>(buffer.data()), std::size_t(extents)...);
}

/// A tensor and the buffer it lives in: the View alone does not keep the buffer alive.
template <class TensorView>
struct OwnedTensor {
  Kokkos::View<unsigned char*, typename TensorView::memory_space> storage;
  TensorView view;
};

/// An uninitialized row-major tensor of the given extents, allocated as bytes (so its size is
/// computed in 64 bits whatever the Kokkos version). Throws RFA_ERROR_OUT_OF_MEMORY (label,
/// bytes) when the allocator refuses, RFA_ERROR_UNSUPPORTED when a View cannot index the shape.
template <class TensorView, class... Extents>
OwnedTensor<TensorView> allocate_tensor(const std::string& label, Extents... extents) {
  static_assert(sizeof...(Extents) == TensorView::rank, "one extent per dimension");
  using T = typename TensorView::non_const_value_type;
  if constexpr (TensorView::rank >= 3) require_view_extents(label.c_str(), {std::int64_t(extents)...});
  OwnedTensor<TensorView> t;
  t.storage = allocate_bytes<typename TensorView::memory_space>(
      label, checked_bytes(label, std::int64_t(sizeof(T)), std::int64_t(extents)...));
  t.view = view_over<TensorView>(t.storage, extents...);
  return t;
}

}  // namespace rfa
