// SPDX-License-Identifier: BSD-3-Clause
#include "device/cuda_handles.hpp"

#include <cstdio>

#include "device/cuda_error.hpp"

namespace rfa::device {

namespace {
void report_cleanup_failure(cudaError_t rc, const char* call) {
  if (rc == cudaSuccess) return;
  // A failure at process exit (the driver is already unloading) is normal and not worth a line.
  if (rc == cudaErrorCudartUnloading) return;
  std::fprintf(stderr, "rfa: %s\n", cuda_error_message(rc, call).c_str());
  cudaGetLastError();
}
}  // namespace

CudaStream::CudaStream() {
  check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
}
CudaStream::~CudaStream() {
  // Returns at once; the stream's resources are released once its queued work completes.
  if (stream_ != nullptr) report_cleanup_failure(cudaStreamDestroy(stream_), "cudaStreamDestroy");
}

CudaEvent::CudaEvent() {
  check_cuda(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming), "cudaEventCreateWithFlags");
}
CudaEvent::~CudaEvent() {
  if (event_ != nullptr) report_cleanup_failure(cudaEventDestroy(event_), "cudaEventDestroy");
}

ScopedDevice::ScopedDevice(int device) {
  int current = 0;
  check_cuda(cudaGetDevice(&current), "cudaGetDevice");
  if (current != device) {
    check_cuda(cudaSetDevice(device), "cudaSetDevice");
    saved_ = current;
  }
}
ScopedDevice::~ScopedDevice() {
  if (saved_ >= 0) report_cleanup_failure(cudaSetDevice(saved_), "cudaSetDevice (restoring the caller's device)");
}

}  // namespace rfa::device
