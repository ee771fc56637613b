// SPDX-License-Identifier: BSD-3-Clause
// The exception firewall of the C ABI (docs/architecture.md §6.3): every entry point runs its body
// through guard(), which turns any C++ exception into an rfa_result_t and records the
// detailed message for rfa_get_last_error_message(). Before the body, guard() refuses a CPU
// that lacks an instruction set the core was compiled for (core/build_isa.hpp): the C ABI's
// files are compiled for the baseline x86-64 (the RFA_BASELINE_ISA property), so that much runs
// on any CPU.
#pragma once

#include <string>

#include "core/build_isa.hpp"
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
/// Records RFA_ERROR_UNSUPPORTED for `function` with build_isa_refusal()'s sentence and returns it.
rfa_result_t refuse_this_cpu(const char* function, const char* refusal) noexcept;

template <class Body>
rfa_result_t guard(const char* function, Body&& body) noexcept {
  if (const char* refusal = build_isa_refusal()) return refuse_this_cpu(function, refusal);
  try {
    clear_last_error();
    return body();
  } catch (...) {
    return translate_current_exception(function);
  }
}

}  // namespace capi
}  // namespace rfa
