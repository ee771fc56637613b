// SPDX-License-Identifier: BSD-3-Clause
#include "device/cuda_error.hpp"

#include "core/error.hpp"

namespace rfa::device {

std::string cuda_error_message(cudaError_t code, const char* call) {
  return std::string(call) + " failed: " + cudaGetErrorName(code) + ": " + cudaGetErrorString(code) + " (CUDA error " +
         std::to_string(int(code)) + ")";
}

void throw_cuda_error(cudaError_t code, const char* call) {
  // A failed call leaves a non-sticky error behind; clear it so that the next, unrelated
  // cudaGetLastError() does not report this failure a second time.
  cudaGetLastError();
  throw Error(RFA_ERROR_CUDA, cuda_error_message(code, call));
}

}  // namespace rfa::device
