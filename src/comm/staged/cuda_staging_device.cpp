// SPDX-License-Identifier: BSD-3-Clause
#include "comm/staged/cuda_staging_device.hpp"

#include <cuda_runtime_api.h>

#include <cstdio>

#include "device/cuda_error.hpp"
#include "device/cuda_handles.hpp"
#include "device/current_device.hpp"

namespace rfa::comm {
namespace {

using device::check_cuda;

/// Complete once the event recorded after the copy has been reached.
class EventTicket final : public CopyTicket {
 public:
  EventTicket() = default;
  cudaEvent_t event() const { return event_.get(); }
  bool done() override {
    const cudaError_t e = cudaEventQuery(event_.get());
    if (e == cudaErrorNotReady) return false;
    check_cuda(e, "cudaEventQuery (staged copy)");
    return true;
  }

 private:
  device::CudaEvent event_;
};

class CudaStagingDevice final : public StagingDevice {
 public:
  CudaStagingDevice() : device_(device::require_current_device()) {}
  /// On `device`, with copies ordered after `compute`.
  CudaStagingDevice(int device, cudaStream_t compute) : device_(device), compute_(compute) {}

  std::unique_ptr<CopyTicket> copy_to_host(void* dst, const void* src, std::size_t bytes) override {
    device::ScopedDevice on(device_);
    // The bytes are whatever the compute stream's queued kernels leave there.
    check_cuda(cudaEventRecord(compute_done_.get(), compute_), "cudaEventRecord (compute stream)");
    check_cuda(cudaStreamWaitEvent(copies_.get(), compute_done_.get(), 0), "cudaStreamWaitEvent (copy stream)");
    check_cuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, copies_.get()),
               "cudaMemcpyAsync (device to pinned host)");
    auto t = std::make_unique<EventTicket>();
    check_cuda(cudaEventRecord(t->event(), copies_.get()), "cudaEventRecord (copy stream)");
    return t;
  }

  std::unique_ptr<CopyTicket> copy_to_device(void* dst, const void* src, std::size_t bytes) override {
    device::ScopedDevice on(device_);
    // The receive buffer may still be read by kernels queued before this exchange started.
    check_cuda(cudaEventRecord(compute_done_.get(), compute_), "cudaEventRecord (compute stream)");
    check_cuda(cudaStreamWaitEvent(copies_.get(), compute_done_.get(), 0), "cudaStreamWaitEvent (copy stream)");
    check_cuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, copies_.get()),
               "cudaMemcpyAsync (pinned host to device)");
    auto t = std::make_unique<EventTicket>();
    check_cuda(cudaEventRecord(t->event(), copies_.get()), "cudaEventRecord (copy stream)");
    check_cuda(cudaStreamWaitEvent(compute_, t->event(), 0), "cudaStreamWaitEvent (compute stream)");
    return t;
  }

  void* allocate_host(std::size_t bytes) override {
    device::ScopedDevice on(device_);
    void* p = nullptr;
    check_cuda(cudaHostAlloc(&p, bytes, cudaHostAllocPortable), "cudaHostAlloc (staging buffer)");
    return p;
  }

  void free_host(void* p) noexcept override {
    if (!p) return;
    const cudaError_t e = cudaFreeHost(p);
    if (e != cudaSuccess) std::fprintf(stderr, "rfa: cudaFreeHost failed: %s\n", cudaGetErrorString(e));
  }

  void set_compute_stream(void* stream) override { compute_ = static_cast<cudaStream_t>(stream); }

  std::unique_ptr<StagingDevice> make_sibling() override {
    device::ScopedDevice on(device_);  // the sibling's copy stream and event on the same device
    return std::make_unique<CudaStagingDevice>(device_, compute_);
  }

 private:
  int device_;
  device::CudaStream copies_;
  device::CudaEvent compute_done_;
  cudaStream_t compute_ = nullptr;
};

}  // namespace

std::unique_ptr<StagingDevice> make_cuda_staging_device() { return std::make_unique<CudaStagingDevice>(); }

}  // namespace rfa::comm
