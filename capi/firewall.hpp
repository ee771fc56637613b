// SPDX-License-Identifier: BSD-3-Clause
// The exception firewall of the C ABI (docs/architecture.md §6.3): every entry point runs its body
// through guard(), which turns any C++ exception into an rfa_result_t and records the
// detailed message for rfa_get_last_error_message(). Before the body, guard() refuses a CPU
// that lacks an instruction set the core was compiled for (core/build_isa.hpp): the C ABI's
// files are compiled for the baseline x86-64 (the RFA_BASELINE_ISA property), so that much runs
// on any CPU. The body runs in a floating-point environment of rfa's own, the caller's restored
// at the end (HeldFloatingPointEnvironment).
#pragma once

#include <cfenv>
#include <string>

#if defined(__SSE__) || defined(__x86_64__)
#include <xmmintrin.h>
#endif

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
/// Records `code` for `function` with the sentence `why` and returns it, running nothing compiled
/// for the build's instruction sets (a refusal on a CPU the build refuses, or one found before
/// it: capi/mpi_family_check.hpp).
rfa_result_t refuse_plainly(const char* function, rfa_result_t code, const char* why) noexcept;
/// Records RFA_ERROR_UNSUPPORTED for `function` with build_isa_refusal()'s sentence and returns it.
inline rfa_result_t refuse_this_cpu(const char* function, const char* refusal) noexcept {
  return refuse_plainly(function, RFA_ERROR_UNSUPPORTED, refusal);
}

/// The floating-point environment a call of the C ABI runs in, whatever the caller's: the
/// caller's is saved, its exception flags cleared and every trap masked (feholdexcept), the
/// rounding set to nearest and, on x86, subnormals kept (MXCSR's flush-to-zero and
/// denormals-are-zero off, as -ffast-math's startup code or Intel's -ftz set them); at the end
/// the caller's is restored, flags included, so that a program that traps exceptions
/// (gfortran's -ffpe-trap, feenableexcept) gets no SIGFPE from rfa's own -inf arithmetic, one
/// that reads its flags (ieee_get_flag) sees none of rfa's, and neither a directed rounding mode
/// nor flushed subnormals change rfa's results. It holds on the calling thread: threads of a
/// host execution space (Kokkos OpenMP) keep the environment they started with, which is this
/// one where rfa initialized Kokkos (docs/reliability.md).
class HeldFloatingPointEnvironment {
 public:
  HeldFloatingPointEnvironment() noexcept : held_(std::feholdexcept(&caller_) == 0) {
    if (!held_) return;
    std::fesetround(FE_TONEAREST);
#if defined(__SSE__) || defined(__x86_64__)
    _mm_setcsr(_mm_getcsr() & ~(kFlushToZero | kDenormalsAreZero));
#endif
  }
  ~HeldFloatingPointEnvironment() {
    if (held_) std::fesetenv(&caller_);
  }
  HeldFloatingPointEnvironment(const HeldFloatingPointEnvironment&) = delete;
  HeldFloatingPointEnvironment& operator=(const HeldFloatingPointEnvironment&) = delete;

 private:
#if defined(__SSE__) || defined(__x86_64__)
  static constexpr unsigned kFlushToZero = 0x8000u, kDenormalsAreZero = 0x0040u;  // MXCSR's FTZ and DAZ bits
#endif
  std::fenv_t caller_;
  bool held_;
};

template <class Body>
rfa_result_t guard(const char* function, Body&& body) noexcept {
  if (const char* refusal = build_isa_refusal()) return refuse_this_cpu(function, refusal);
  const HeldFloatingPointEnvironment environment;
  try {
    clear_last_error();
    return body();
  } catch (...) {
    return translate_current_exception(function);
  }
}

}  // namespace capi
}  // namespace rfa
