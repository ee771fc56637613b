// SPDX-License-Identifier: BSD-3-Clause
#include "device/stream_order.hpp"

#include <cuda_runtime_api.h>

#include <exception>

#include "device/cuda_error.hpp"
#include "device/cuda_handles.hpp"
#include "device/stream_wait.hpp"

namespace rfa::device {

StreamOrder::StreamOrder() = default;
StreamOrder::~StreamOrder() = default;

void StreamOrder::call_queued_on(void* stream) noexcept {
  try {
    if (!last_call_) last_call_ = std::make_unique<CudaEvent>();
    if (cudaEventRecord(last_call_->get(), static_cast<cudaStream_t>(stream)) == cudaSuccess) {
      recorded_ = true;
      return;
    }
    cudaGetLastError();  // the stream's own error comes back from the next call that uses it
  } catch (const std::exception&) {
  }
  recorded_ = false;
  lost_ = true;
}

void StreamOrder::switch_to(void* stream) {
  if (lost_) {
    check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize (ordering the context's calls across streams)");
    lost_ = false;
    return;
  }
  if (recorded_)
    check_cuda(cudaStreamWaitEvent(static_cast<cudaStream_t>(stream), last_call_->get(), 0),
               "cudaStreamWaitEvent (ordering the context's calls across streams)");
}

void StreamOrder::wait_for_last_call(double timeout_s, const std::string& what) const {
  if (recorded_) wait_for_event(last_call_->get(), timeout_s, what);
}

}  // namespace rfa::device
