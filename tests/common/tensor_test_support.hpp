// SPDX-License-Identifier: BSD-3-Clause
// Helpers for comparing rfa tensors with the float64 reference, shared by the kernel and
// engine suites.
#pragma once

#include <limits>
#include <vector>

#include "core/dtype.hpp"

namespace rfa {
namespace test {

/// Tolerance on max|got - ref| / max(1e-2, max|ref|) for a result stored in dtype T.
template <class T>
double tolerance();
template <>
inline double tolerance<float>() {
  return 2e-5;
}
template <>
inline double tolerance<bf16_t>() {
  return 1.6e-2;
}
template <>
inline double tolerance<fp16_t>() {
  return 2.5e-3;
}

/// Fills a tensor with NaN so anything a kernel forgets to write is caught.
template <class View>
void poison(const View& v) {
  using T = typename View::non_const_value_type;
  T* data = v.data();
  for (std::size_t i = 0; i < v.size(); ++i) data[i] = from_float<T>(std::numeric_limits<float>::quiet_NaN());
}

/// The tensor's values as doubles, in memory order.
template <class View>
std::vector<double> to_doubles(const View& v) {
  std::vector<double> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = to_float(v.data()[i]);
  return out;
}

}  // namespace test
}  // namespace rfa
