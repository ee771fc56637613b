// SPDX-License-Identifier: BSD-3-Clause
// Turns CUDA runtime return codes into rfa::Error(RFA_ERROR_CUDA), naming the call.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

namespace rfa::device {

/// "cudaSetDevice failed: cudaErrorInvalidDevice: invalid device ordinal (CUDA error 101)".
std::string cuda_error_message(cudaError_t code, const char* call);

/// Throws rfa::Error(RFA_ERROR_CUDA, cuda_error_message(code, call)).
[[noreturn]] void throw_cuda_error(cudaError_t code, const char* call);

/// Throws rfa::Error(RFA_ERROR_CUDA, ...) unless code is cudaSuccess.
inline void check_cuda(cudaError_t code, const char* call) {
  if (code != cudaSuccess) throw_cuda_error(code, call);
}

}  // namespace rfa::device
