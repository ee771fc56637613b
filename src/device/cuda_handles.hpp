// SPDX-License-Identifier: BSD-3-Clause
// Owning wrappers of CUDA streams and events, and a guard that makes a device current for a
// scope. Destructors never throw: a failure there is printed, not raised.
#pragma once

#include <cuda_runtime_api.h>

namespace rfa::device {

/// A stream of its own that does not synchronize with the legacy default stream
/// (cudaStreamNonBlocking): work on it is ordered against other streams only by events.
class CudaStream {
 public:
  /// Creates it on the current device. Throws RFA_ERROR_CUDA.
  CudaStream();
  ~CudaStream();
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;
  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

/// An event for ordering and completion queries only (no timing: cheaper to record).
class CudaEvent {
 public:
  /// Creates it on the current device. Throws RFA_ERROR_CUDA.
  CudaEvent();
  ~CudaEvent();
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;
  cudaEvent_t get() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

/// Makes `device` current until the end of the scope, then restores the caller's device, so
/// a library call never changes the application's current device.
class ScopedDevice {
 public:
  /// Throws RFA_ERROR_CUDA.
  explicit ScopedDevice(int device);
  ~ScopedDevice();
  ScopedDevice(const ScopedDevice&) = delete;
  ScopedDevice& operator=(const ScopedDevice&) = delete;

 private:
  int saved_ = -1;  // -1: the device was already current, nothing to restore
};

}  // namespace rfa::device
