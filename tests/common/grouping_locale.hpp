// SPDX-License-Identifier: BSD-3-Clause
// A host program's global C++ locale as a German one sets it (std::locale::global): thousands
// grouped by '.', a decimal comma. Made from the classic locale with a numpunct facet, so that it
// needs no locale installed on the machine; restored when the scope ends.
#pragma once

#include <locale>
#include <string>

namespace rfa::test {

class GroupingNumpunct : public std::numpunct<char> {
 protected:
  char do_decimal_point() const override { return ','; }
  char do_thousands_sep() const override { return '.'; }
  std::string do_grouping() const override { return "\3"; }
};

/// While in scope, the global C++ locale (what a default-constructed stream takes) groups
/// thousands with '.' and writes a decimal comma.
class GlobalGroupingLocale {
 public:
  GlobalGroupingLocale() : before_(std::locale::global(std::locale(std::locale::classic(), new GroupingNumpunct))) {}
  ~GlobalGroupingLocale() { std::locale::global(before_); }
  GlobalGroupingLocale(const GlobalGroupingLocale&) = delete;
  GlobalGroupingLocale& operator=(const GlobalGroupingLocale&) = delete;

 private:
  std::locale before_;
};

}  // namespace rfa::test
