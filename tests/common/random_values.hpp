// SPDX-License-Identifier: BSD-3-Clause
// Reproducible test inputs shared by the suites.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace rfa {
namespace test {

/// n values uniform in [-1, 1) from a 64-bit Mersenne twister seeded with `seed`: the same on
/// every rank and in every run.
template <class T = double>
std::vector<T> random_values(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<T> dist(T(-1), T(1));
  std::vector<T> v(n);
  for (T& x : v) x = dist(gen);
  return v;
}

}  // namespace test
}  // namespace rfa
