// SPDX-License-Identifier: BSD-3-Clause
// Cheap checks on the caller's raw buffers: NULL pointers, addresses not aligned to their
// element (reading a float through such a pointer is undefined behaviour in C and C++), and
// overlapping outputs. A C API cannot see how large a buffer really is, but it knows how
// large it must be, so two buffers whose required byte ranges intersect are certainly aliased.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/error.hpp"

namespace rfa {
namespace capi {

/// One argument: its name, where it starts, how many bytes the call will touch, and the
/// alignment it needs (its elements' size; 1: any address; more where `aligned_for` says why).
struct Buffer {
  const char* name;
  const void* data;
  std::int64_t bytes;
  std::int64_t alignment = 1;
  const char* aligned_for = nullptr;  ///< what needs more than the elements' alignment (nullptr: nothing)
};

inline bool overlap(const Buffer& a, const Buffer& b) {
  const auto a0 = reinterpret_cast<std::uintptr_t>(a.data), b0 = reinterpret_cast<std::uintptr_t>(b.data);
  return a.bytes > 0 && b.bytes > 0 && a0 < b0 + std::uintptr_t(b.bytes) && b0 < a0 + std::uintptr_t(a.bytes);
}

/// Throws RFA_ERROR_INVALID_ARGUMENT for a NULL or misaligned buffer, or for an output
/// overlapping any other buffer (inputs may overlap each other: they are only read).
inline void check_buffers(const std::vector<Buffer>& inputs, const std::vector<Buffer>& outputs) {
  for (const std::vector<Buffer>* list : {&inputs, &outputs})
    for (const Buffer& b : *list) {
      if (!b.data) fail(RFA_ERROR_INVALID_ARGUMENT, b.name, " is NULL");
      const auto address = reinterpret_cast<std::uintptr_t>(b.data);
      if (b.alignment > 1 && address % std::uintptr_t(b.alignment) != 0) {
        if (b.aligned_for != nullptr)
          fail(RFA_ERROR_INVALID_ARGUMENT, b.name, " (address ", b.data, ") is not ", b.alignment,
               "-byte aligned: ", b.aligned_for);
        fail(RFA_ERROR_INVALID_ARGUMENT, b.name, " (address ", b.data, ") is not aligned to its ", b.alignment,
             "-byte elements");
      }
    }
  for (std::size_t o = 0; o < outputs.size(); ++o) {
    for (const Buffer& i : inputs)
      if (overlap(outputs[o], i))
        fail(RFA_ERROR_INVALID_ARGUMENT, "the output ", outputs[o].name, " overlaps the input ", i.name);
    for (std::size_t p = o + 1; p < outputs.size(); ++p)
      if (overlap(outputs[o], outputs[p]))
        fail(RFA_ERROR_INVALID_ARGUMENT, "the outputs ", outputs[o].name, " and ", outputs[p].name, " overlap");
  }
}

}  // namespace capi
}  // namespace rfa
