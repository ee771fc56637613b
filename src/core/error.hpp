// SPDX-License-Identifier: BSD-3-Clause
// The one exception type of the C++ core. The C API's firewall (capi/) maps it to
// rfa_result_t; nothing else may escape the core.
#pragma once

#include <stdexcept>
#include <string>

#include "core/text_stream.hpp"
#include "rfa/rfa.h"

namespace rfa {

class Error : public std::runtime_error {
 public:
  Error(rfa_result_t code, const std::string& message) : std::runtime_error(message), code_(code) {}
  rfa_result_t code() const noexcept { return code_; }

 private:
  rfa_result_t code_;
};

/// An error that every rank raised at the same point of a collective call, decided by one
/// agreement (comm/agreement.hpp): the ranks are still in step, so the call failed cleanly and
/// later calls may proceed. Any other error raised inside a collective call may have left
/// this rank out of step with the others.
class AgreedError : public Error {
 public:
  AgreedError(rfa_result_t code, const std::string& message) : Error(code, message) {}
};

namespace detail {
inline void append(std::ostringstream&) {}
template <class T, class... Rest>
void append(std::ostringstream& os, const T& first, const Rest&... rest) {
  os << first;
  append(os, rest...);
}
}  // namespace detail

/// Builds a message from its pieces and throws it with the given code.
template <class... Parts>
[[noreturn]] void fail(rfa_result_t code, const Parts&... parts) {
  TextStream os;
  detail::append(os, parts...);
  throw Error(code, os.str());
}

/// Runs `work` and returns what it returns; where it throws RFA_ERROR_TIMEOUT, calls
/// `on_timeout(error)` before the error goes on: what a timeout leaves behind (work that may
/// still run and write its buffers) is kept or reported there.
template <class Work, class OnTimeout>
decltype(auto) on_timeout(Work&& work, OnTimeout&& handle) {
  try {
    return work();
  } catch (const Error& e) {
    if (e.code() == RFA_ERROR_TIMEOUT) handle(e);
    throw;
  }
}

/// Throws RFA_ERROR_INVALID_ARGUMENT (or the given code) unless the condition holds.
template <class... Parts>
void require(bool condition, const Parts&... parts) {
  if (!condition) fail(RFA_ERROR_INVALID_ARGUMENT, parts...);
}

}  // namespace rfa
