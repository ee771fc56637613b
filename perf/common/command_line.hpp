// SPDX-License-Identifier: BSD-3-Clause
// The numbers on perf/'s command lines: a value is read whole (no empty text, no leading blank,
// no trailing characters: "4x" is not 4) and within its bounds, or refused with a message that
// names the option and the text given. Header-only and free of rfa's other parts, so that the
// GPU benchmarks built with nvcc alone (perf/cuda/Makefile) use it too.
#pragma once
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace rfa {
namespace perf {

/// A value on a command line that is not what its option takes; what() names both.
class OptionError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

namespace detail {

/// Whether strto*() may read `text` whole: not empty, and no blank in front (which they skip).
inline bool no_blank_start(const std::string& text) {
  return !text.empty() && !std::isspace(static_cast<unsigned char>(text[0]));
}

/// Throws OptionError: "`option` expects `what` >= lo, got 'text'" where `open` (no upper bound
/// to show), else "... from lo to hi, ...".
template <class T>
[[noreturn]] void refuse(const std::string& option, const char* what, const std::string& text, T lo, T hi, bool open) {
  std::ostringstream m;
  m << option << " expects " << what << ' ';
  if (open)
    m << ">= " << lo;
  else
    m << "from " << lo << " to " << hi;
  m << ", got '" << text << "'";
  throw OptionError(m.str());
}

}  // namespace detail

/// `text` as a whole number from `lo` to `hi` for the option `option` (its name as the
/// message should show it, e.g. "--seq"); throws OptionError otherwise.
inline std::int64_t whole_number(const std::string& option, const std::string& text, std::int64_t lo,
                                 std::int64_t hi = std::numeric_limits<std::int64_t>::max()) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  const bool whole = detail::no_blank_start(text) && end && *end == '\0' && errno != ERANGE;
  if (!whole || v < lo || v > hi) {
    // An int's or an int64's largest value is no bound to show, unless the value passed it.
    const bool open =
        (hi == std::numeric_limits<std::int64_t>::max() || hi == std::numeric_limits<int>::max()) && !(whole && v > hi);
    detail::refuse(option, "a whole number", text, lo, hi, open);
  }
  return v;
}

/// whole_number() for an int option (at most INT_MAX unless `hi` says less).
inline int whole_int(const std::string& option, const std::string& text, int lo,
                     int hi = std::numeric_limits<int>::max()) {
  return int(whole_number(option, text, lo, hi));
}

/// `text` as a finite number from `lo` to `hi` for the option `option`; throws OptionError
/// otherwise.
inline double real_number(const std::string& option, const std::string& text, double lo,
                          double hi = std::numeric_limits<double>::max()) {
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  const bool whole = detail::no_blank_start(text) && end && *end == '\0' && errno != ERANGE && std::isfinite(v);
  if (!whole || v < lo || v > hi)
    detail::refuse(option, "a number", text, lo, hi, hi == std::numeric_limits<double>::max());
  return v;
}

/// `text` as a comma-separated list of whole numbers from `lo` to `hi` (at least one) for the
/// option `option`; throws OptionError otherwise.
inline std::vector<std::int64_t> whole_numbers(const std::string& option, const std::string& text, std::int64_t lo,
                                               std::int64_t hi = std::numeric_limits<std::int64_t>::max()) {
  std::vector<std::int64_t> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) out.push_back(whole_number(option, item, lo, hi));
  if (out.empty() || (!text.empty() && text.back() == ','))
    throw OptionError(option + " expects a list of whole numbers >= " + std::to_string(lo) +
                      " separated by commas, got '" + text + "'");
  return out;
}

/// `text` as a comma-separated list of finite numbers of at least `lo` (at least one) for the
/// option `option`; throws OptionError otherwise.
inline std::vector<double> real_numbers(const std::string& option, const std::string& text, double lo) {
  std::vector<double> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) out.push_back(real_number(option, item, lo));
  if (out.empty() || (!text.empty() && text.back() == ','))
    throw OptionError(option + " expects a list of numbers separated by commas, got '" + text + "'");
  return out;
}

/// whole_numbers() for a list of int (each at most INT_MAX unless `hi` says less).
inline std::vector<int> whole_ints(const std::string& option, const std::string& text, int lo,
                                   int hi = std::numeric_limits<int>::max()) {
  std::vector<int> out;
  for (std::int64_t v : whole_numbers(option, text, lo, hi)) out.push_back(int(v));
  return out;
}

/// Where --help is among the arguments: prints "usage: `usage`" and exits 0, before anything
/// else reads them (Kokkos included, which has its own help, --kokkos-help).
inline void exit_on_help(int argc, char** argv, const char* usage) {
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--help") {
      std::printf("usage: %s", usage);
      std::exit(0);
    }
}

/// parse()'s options, or, where it throws OptionError, the reason printed as "`program`:
/// <reason>" and exit 2: for the programs without MPI, whose one process speaks for itself.
template <class Parse>
auto options_or_exit(const char* program, Parse&& parse) -> decltype(parse()) {
  try {
    return parse();
  } catch (const OptionError& e) {
    std::fprintf(stderr, "%s: %s\n", program, e.what());
    std::exit(2);
  }
}

/// A number as a command line gives it: "30", "0.5" (an ostream's default form).
inline std::string number_text(double x) {
  std::ostringstream os;
  os << x;
  return os.str();
}

/// The mask's and the scores' variant as the shape labels spell it: " window W", " documents
/// SPEC" and " softcap C", each where set ("" for none of them).
inline std::string variant_label(std::int64_t window, const std::string& documents, double softcap) {
  return (window > 0 ? " window " + std::to_string(window) : "") +
         (documents.empty() ? "" : " documents " + documents) +
         (softcap > 0.0 ? " softcap " + number_text(softcap) : "");
}

}  // namespace perf
}  // namespace rfa
