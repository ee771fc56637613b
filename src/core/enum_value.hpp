// SPDX-License-Identifier: BSD-3-Clause
// The integer a caller stored in an enum-typed argument or field.
//
// C passes any int in an enum; in C++ an enum without a fixed underlying type may only hold
// the values of its bit range, so reading 7 as an rfa_layout_t is undefined behaviour
// (UBSan: "load of value 7, which is not a valid value"). Every enum that comes from a
// caller (the C API's arguments, the kernels' params) is therefore read through its bytes and
// checked before it is used as an enum.
#pragma once

#include <cstring>

namespace rfa {

template <class Enum>
int enum_value(const Enum& e) {
  static_assert(sizeof(Enum) == sizeof(int), "C enums are int-sized on every supported ABI");
  int v;
  std::memcpy(&v, &e, sizeof v);
  return v;
}

}  // namespace rfa
