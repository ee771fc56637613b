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

/// The compute stream's work up to the event recorded on it.
class EventMark final : public ComputeMark {
 public:
  explicit EventMark(cudaStream_t compute) {
    check_cuda(cudaEventRecord(event_.get(), compute), "cudaEventRecord (compute stream)");
  }
  cudaEvent_t event() const { return event_.get(); }

 private:
  device::CudaEvent event_;
};

class CudaStagingDevice final : public StagingDevice {
 public:
  CudaStagingDevice() : device_(device::require_current_device()) {}
  /// On `device`, with copies ordered after `compute`.
  CudaStagingDevice(int device, cudaStream_t compute) : device_(device), compute_(compute) {}

  std::unique_ptr<ComputeMark> mark_compute() override {
    device::ScopedDevice on(device_);
    return std::make_unique<EventMark>(compute_);
  }

  std::unique_ptr<CopyTicket> copy_to_host(void* dst, const void* src, std::size_t bytes,
                                           const ComputeMark& after) override {
    device::ScopedDevice on(device_);
    wait_for(after, to_host_);
    auto t = std::make_unique<EventTicket>();  // before the copy: its failure queues nothing
    check_cuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, to_host_.get()),
               "cudaMemcpyAsync (device to pinned host)");
    settled_if_failed(cudaEventRecord(t->event(), to_host_.get()), to_host_, "cudaEventRecord (copy stream)");
    return t;
  }

  std::unique_ptr<CopyTicket> copy_to_device(void* dst, const void* src, std::size_t bytes,
                                             const ComputeMark& after) override {
    device::ScopedDevice on(device_);
    wait_for(after, to_device_);
    auto t = std::make_unique<EventTicket>();
    check_cuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, to_device_.get()),
               "cudaMemcpyAsync (pinned host to device)");
    settled_if_failed(cudaEventRecord(t->event(), to_device_.get()), to_device_, "cudaEventRecord (copy stream)");
    settled_if_failed(cudaStreamWaitEvent(compute_, t->event(), 0), to_device_, "cudaStreamWaitEvent (compute stream)");
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
    device::ScopedDevice on(device_);  // the sibling's copy streams on the same device
    return std::make_unique<CudaStagingDevice>(device_, compute_);
  }

 private:
  /// `copies` waits for the compute work of `after`: only that, not the kernels queued since,
  /// which read other buffers (a ring step's copy into the next block overlaps the kernel on
  /// the current one instead of waiting for it).
  static void wait_for(const ComputeMark& after, const device::CudaStream& copies) {
    // Every mark this device is handed is one of its own (mark_compute()).
    const cudaEvent_t e = static_cast<const EventMark&>(after).event();
    check_cuda(cudaStreamWaitEvent(copies.get(), e, 0), "cudaStreamWaitEvent (copy stream)");
  }

  /// Throws for `error` once the copy already queued on `copies` has finished: the caller, seeing
  /// the failure, returns the pinned buffer to its pool for the next exchange, which the copy
  /// must no longer write or read.
  static void settled_if_failed(cudaError_t error, const device::CudaStream& copies, const char* what) {
    if (error == cudaSuccess) return;
    cudaStreamSynchronize(copies.get());
    cudaGetLastError();
    check_cuda(error, what);
  }

  int device_;
  // A copy stream per direction: in one, a copy onto the device (the next K/V block, which the
  // next kernel waits for) would queue behind a copy off it that waits for the current kernel
  // (the backward's dK/dV partial), and the two directions of the link would not overlap. A
  // copy off the device that sends what a copy onto it delivered is ordered by the compute
  // stream: that waits for the copy in, and the mark the copy out waits for is taken after.
  device::CudaStream to_host_, to_device_;
  cudaStream_t compute_ = nullptr;
};

}  // namespace

std::unique_ptr<StagingDevice> make_cuda_staging_device() { return std::make_unique<CudaStagingDevice>(); }

}  // namespace rfa::comm
