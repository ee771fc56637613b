// SPDX-License-Identifier: BSD-3-Clause
// The exception firewall of the C ABI (docs/architecture.md §6.3): every entry point runs its body
// through guard(), which turns any C++ exception into an rfa_result_t and records the
// detailed message for rfa_get_last_error_message().
#pragma once

#include <string>

#include "rfa/rfa.h"

namespace rfa {
namespace capi {

/// Records a failure for the calling thread and returns its code.
rfa_result_t set_last_error(rfa_result_t code, const std::string& message);
/// Clears the calling thread's message (successful calls do so).
void clear_last_error();
/// The calling thread's last message ("" after a successful call).
const char* last_error_message_cstr();
/// Maps the exception in flight (call only inside a catch block) to a code and message.
rfa_result_t translate_current_exception(const char* function);

template <class Body>
rfa_result_t guard(const char* function, Body&& body) noexcept {
  try {
    clear_last_error();
    return body();
  } catch (...) {
    return translate_current_exception(function);
  }
}

}  // namespace capi
}  // namespace rfa
