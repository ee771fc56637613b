// SPDX-License-Identifier: BSD-3-Clause
#include "api_support.hpp"

#include <cstdarg>
#include <cstdio>

namespace rfa_cuda {
namespace detail {
namespace {
thread_local char message[512] = "";
}  // namespace

rfa_cuda_status fail(rfa_cuda_status status, const char* format, ...) {
  va_list args;
  va_start(args, format);
  std::vsnprintf(message, sizeof message, format, args);
  va_end(args);
  return status;
}

rfa_cuda_status from_cuda(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return RFA_CUDA_SUCCESS;
  return fail(RFA_CUDA_ERROR_CUDA, "%s: CUDA error %d (%s)", what, static_cast<int>(error), cudaGetErrorString(error));
}

const char* last_message() { return message; }

}  // namespace detail
}  // namespace rfa_cuda
