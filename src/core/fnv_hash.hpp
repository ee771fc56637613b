// SPDX-License-Identifier: BSD-3-Clause
// The 64-bit FNV-1a hash over the bytes of 64-bit values, by which ranks agree on a whole list
// (document boundaries, mask ranges) with one number.
#pragma once

#include <cstdint>
#include <cstring>

namespace rfa {

/// FNV-1a's starting value.
constexpr std::uint64_t kFnvOffsetBasis = 0xcbf29ce484222325ull;

/// Folds the 8 bytes of `value` into the running hash `h`.
inline void fnv1a_append(std::uint64_t& h, std::int64_t value) {
  unsigned char bytes[sizeof value];
  std::memcpy(bytes, &value, sizeof bytes);
  for (const unsigned char b : bytes) {
    h ^= b;
    h *= 0x100000001b3ull;
  }
}

/// The hash as the signed 64-bit value the agreements compare.
inline std::int64_t fnv1a_value(std::uint64_t h) {
  std::int64_t out;
  std::memcpy(&out, &h, sizeof out);
  return out;
}

}  // namespace rfa
