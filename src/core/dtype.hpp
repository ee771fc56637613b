// SPDX-License-Identifier: BSD-3-Clause
// Storage types of rfa and their conversions to and from fp32. Kokkos 3.4 has no
// bfloat16 and its half type depends on the backend, so rfa carries its own 16-bit
// storage types: plain bit patterns, converted with round-to-nearest-even. All
// arithmetic happens in fp32 after conversion.
#pragma once

#include <Kokkos_Core.hpp>
#include <cstdint>
#include <cstring>

#include "core/error.hpp"
#include "rfa/rfa.h"

namespace rfa {

struct bf16_t {
  std::uint16_t bits;
};
struct fp16_t {
  std::uint16_t bits;
};

KOKKOS_INLINE_FUNCTION std::uint32_t float_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
KOKKOS_INLINE_FUNCTION float bits_float(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

KOKKOS_INLINE_FUNCTION float to_float(float x) { return x; }
KOKKOS_INLINE_FUNCTION float to_float(bf16_t x) { return bits_float(std::uint32_t(x.bits) << 16); }

KOKKOS_INLINE_FUNCTION float to_float(fp16_t x) {
  const std::uint32_t h = x.bits;
  const std::uint32_t sign = (h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu;
  const std::uint32_t man = h & 0x3ffu;
  if (exp == 0x1f) return bits_float(sign | 0x7f800000u | (man << 13));  // inf / nan
  if (exp != 0) return bits_float(sign | ((exp + 112u) << 23) | (man << 13));
  // Subnormal half: value = man * 2^-24, exact in fp32.
  const float mag = float(man) * 5.9604644775390625e-8f;
  return sign ? -mag : mag;
}

KOKKOS_INLINE_FUNCTION void from_float(float x, float& out) { out = x; }

KOKKOS_INLINE_FUNCTION void from_float(float x, bf16_t& out) {
  std::uint32_t u = float_bits(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) {  // nan: keep it a (quiet) nan
    out.bits = std::uint16_t((u >> 16) | 0x40u);
    return;
  }
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest, ties to even
  out.bits = std::uint16_t(u >> 16);
}

KOKKOS_INLINE_FUNCTION void from_float(float x, fp16_t& out) {
  const std::uint32_t u = float_bits(x);
  const std::uint32_t sign = (u >> 16) & 0x8000u;
  const std::uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) {
    out.bits = std::uint16_t(sign | 0x7e00u);
    return;
  }
  if (abs >= 0x477ff000u) {  // rounds to >= 65520: overflow to inf
    out.bits = std::uint16_t(sign | 0x7c00u);
    return;
  }
  if (abs < 0x38800000u) {  // below the smallest normal half (2^-14): subnormal or zero
    // value / 2^-24, rounded to nearest even by the fp32 adder.
    const float scaled = bits_float(abs) * 16777216.0f;
    const float rounded = scaled + 8388608.0f - 8388608.0f;  // round to integer, ties to even
    out.bits = std::uint16_t(sign | std::uint32_t(rounded));
    return;
  }
  std::uint32_t r = abs - (112u << 23);  // rebias exponent
  r += 0xfffu + ((r >> 13) & 1u);        // round to nearest even at bit 13
  out.bits = std::uint16_t(sign | (r >> 13));
}

template <class T>
KOKKOS_INLINE_FUNCTION T from_float(float x) {
  T out;
  from_float(x, out);
  return out;
}

template <class T>
struct dtype_of;
template <>
struct dtype_of<float> {
  static constexpr rfa_dtype_t value = RFA_DTYPE_FLOAT32;
};
template <>
struct dtype_of<bf16_t> {
  static constexpr rfa_dtype_t value = RFA_DTYPE_BFLOAT16;
};
template <>
struct dtype_of<fp16_t> {
  static constexpr rfa_dtype_t value = RFA_DTYPE_FLOAT16;
};

inline const char* dtype_name(rfa_dtype_t t) {
  switch (t) {
    case RFA_DTYPE_FLOAT32: return "float32";
    case RFA_DTYPE_BFLOAT16: return "bfloat16";
    case RFA_DTYPE_FLOAT16: return "float16";
  }
  return "unknown dtype";
}

inline std::size_t dtype_size(rfa_dtype_t t) { return t == RFA_DTYPE_FLOAT32 ? 4 : 2; }

/// Calls f(T{}) with T the storage type named by the runtime dtype.
template <class F>
decltype(auto) dispatch_dtype(rfa_dtype_t t, F&& f) {
  switch (t) {
    case RFA_DTYPE_FLOAT32: return f(float{});
    case RFA_DTYPE_BFLOAT16: return f(bf16_t{});
    case RFA_DTYPE_FLOAT16: return f(fp16_t{});
  }
  fail(RFA_ERROR_INVALID_ARGUMENT, "unknown dtype value ", int(t));
}

}  // namespace rfa
