// SPDX-License-Identifier: BSD-3-Clause
#include "topology/natural_order.hpp"

#include <cctype>
#include <cstddef>

namespace rfa::topology {
namespace {

bool is_digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

// Compares the digit runs starting at a[i] and b[j] by value, advancing i and j past them.
// Returns <0, 0, >0. Leading zeros are skipped, so no number ever overflows.
int compare_numbers(const std::string& a, std::size_t& i, const std::string& b, std::size_t& j) {
  while (i < a.size() && a[i] == '0' && i + 1 < a.size() && is_digit(a[i + 1])) ++i;
  while (j < b.size() && b[j] == '0' && j + 1 < b.size() && is_digit(b[j + 1])) ++j;
  std::size_t start_a = i, start_b = j;
  while (i < a.size() && is_digit(a[i])) ++i;
  while (j < b.size() && is_digit(b[j])) ++j;
  std::size_t len_a = i - start_a, len_b = j - start_b;
  if (len_a != len_b) return len_a < len_b ? -1 : 1;
  return a.compare(start_a, len_a, b, start_b, len_b);
}

}  // namespace

bool natural_less(const std::string& a, const std::string& b) {
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (is_digit(a[i]) && is_digit(b[j])) {
      int c = compare_numbers(a, i, b, j);
      if (c != 0) return c < 0;
    } else {
      if (a[i] != b[j]) return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[j]);
      ++i;
      ++j;
    }
  }
  if ((i < a.size()) != (j < b.size())) return j < b.size();  // a proper prefix comes first
  return a < b;
}

}  // namespace rfa::topology
