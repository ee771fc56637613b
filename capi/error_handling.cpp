// SPDX-License-Identifier: BSD-3-Clause
#include <new>
#include <string>

#include "core/enum_value.hpp"
#include "core/error.hpp"
#include "firewall.hpp"

namespace rfa {
namespace capi {
namespace {
thread_local std::string last_error_message;
}

rfa_result_t set_last_error(rfa_result_t code, const std::string& message) {
  try {
    last_error_message = message;
  } catch (...) {
    // Out of memory while recording the message: the code still tells the story.
  }
  return code;
}

void clear_last_error() { last_error_message.clear(); }

const char* last_error_message_cstr() { return last_error_message.c_str(); }

rfa_result_t refuse_plainly(const char* function, rfa_result_t code, const char* why) noexcept {
  try {
    last_error_message = function;
    last_error_message += ": ";
    last_error_message += why;
  } catch (...) {
    // Out of memory while recording the message: the code still tells the story.
  }
  return code;
}

rfa_result_t translate_current_exception(const char* function) {
  const std::string where = std::string(function) + ": ";
  try {
    throw;
  } catch (const Error& e) {
    return set_last_error(e.code(), where + e.what());
  } catch (const std::bad_alloc&) {
    return set_last_error(RFA_ERROR_OUT_OF_MEMORY, where + "out of memory");
  } catch (const std::exception& e) {
    return set_last_error(RFA_ERROR_INTERNAL, where + "internal error: " + e.what());
  } catch (...) {
    return set_last_error(RFA_ERROR_INTERNAL, where + "internal error: unknown exception");
  }
}

}  // namespace capi
}  // namespace rfa

extern "C" {

RFA_API const char* rfa_get_error_string(rfa_result_t code) {
  switch (rfa::enum_value(code)) {  // any int may arrive from C
    case RFA_SUCCESS: return "success";
    case RFA_ERROR_INVALID_ARGUMENT: return "invalid argument";
    case RFA_ERROR_INVALID_USAGE: return "invalid usage (ranks disagree, or call out of order)";
    case RFA_ERROR_UNSUPPORTED: return "unsupported by this build";
    case RFA_ERROR_OUT_OF_MEMORY: return "out of memory";
    case RFA_ERROR_INTERNAL: return "internal error";
    case RFA_ERROR_MPI: return "MPI error";
    case RFA_ERROR_NCCL: return "NCCL error";
    case RFA_ERROR_CUDA: return "CUDA error";
    case RFA_ERROR_HWLOC: return "hwloc error";
    case RFA_ERROR_KOKKOS: return "Kokkos error";
    case RFA_ERROR_VERSION_MISMATCH: return "header and library major versions differ";
    case RFA_ERROR_TIMEOUT: return "communication timed out";
    case RFA_ERROR_CALL_MISMATCH: return "ranks are in different collective calls";
    case RFA_ERROR_NONFINITE: return "NaN or infinity in a checked tensor";
  }
  return "unknown rfa result code";
}

RFA_API const char* rfa_get_last_error_message(void) { return rfa::capi::last_error_message_cstr(); }

RFA_API rfa_result_t rfa_report_binding_error(rfa_result_t code, const char* message) {
  if (code == RFA_SUCCESS) return code;
  return rfa::capi::set_last_error(code, message ? message : "");
}

}  // extern "C"
