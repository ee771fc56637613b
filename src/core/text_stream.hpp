// SPDX-License-Identifier: BSD-3-Clause
// The one stream the library formats text with: messages, the plan's text and the files it
// writes for programs to read (RFA_TOPO_DUMP's JSON). Numbers go out in the classic ("C") locale
// whatever the host program chose: under a global C++ locale such as de_DE a plain
// std::ostringstream writes 4096 as "4.096" (a count that reads as a decimal) and groups even a
// hexadecimal hash ("8cf.370.7b5"), and C's printf follows setlocale's decimal comma.
// tests/scripts/classic_locale_test.sh keeps other streams and printf's number formats out of
// the library.
#pragma once

#include <iomanip>
#include <locale>
#include <sstream>
#include <string>

namespace rfa {

/// A std::ostringstream in the classic locale.
class TextStream : public std::ostringstream {
 public:
  TextStream() { imbue(std::locale::classic()); }
};

/// `x` with `digits` significant digits, as printf's %.{digits}g writes it in the C locale.
inline std::string general_number(double x, int digits) {
  TextStream s;
  s << std::setprecision(digits) << x;
  return s.str();
}

/// `x` with `decimals` digits after the point, as printf's %.{decimals}f writes it in the C locale.
inline std::string fixed_number(double x, int decimals) {
  TextStream s;
  s << std::fixed << std::setprecision(decimals) << x;
  return s.str();
}

}  // namespace rfa
