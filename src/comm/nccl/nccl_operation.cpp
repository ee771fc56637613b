// SPDX-License-Identifier: BSD-3-Clause
#include "comm/nccl/nccl_operation.hpp"

#include <cstdio>

#include "core/error.hpp"
#include "core/text_stream.hpp"
#include "device/cuda_error.hpp"

namespace rfa::comm::nccl {

using device::check_cuda;

NcclPendingOperation::NcclPendingOperation(std::shared_ptr<NcclCommState> state,
                                           std::unique_ptr<device::CudaEvent> done, cudaStream_t compute,
                                           std::string what, Clock::time_point started)
    : state_(std::move(state)),
      done_(std::move(done)),
      compute_(compute),
      what_(std::move(what)),
      deadline_(deadline_after(started, state_->timeout_seconds())) {}

bool NcclPendingOperation::test() {
  if (finished_) return true;
  state_->require_usable(what_);
  device::ScopedDevice on_device(state_->device());
  const cudaError_t query = cudaEventQuery(done_->get());
  if (query == cudaErrorNotReady) {
    // An NCCL failure (a peer died, a network error) shows here, not in the event, which
    // would simply never complete.
    state_->check_async_error(what_);
    if (Clock::now() >= deadline_) {
      state_->abort_and_fail(
          RFA_ERROR_TIMEOUT,
          what_ + " did not complete within " + general_number(state_->timeout_seconds(), 6) +
              " s: a neighbour may not have started its side (every rank must start the same "
              "exchanges in the same order; options.timeout_s or RFA_NCCL_TIMEOUT_S sets the deadline)");
    }
    return false;
  }
  if (query != cudaSuccess) {
    // A device fault (often sticky): the communicator cannot be trusted after it.
    state_->abort_and_fail(RFA_ERROR_CUDA, what_ + ": " + device::cuda_error_message(query, "cudaEventQuery"));
  }
  state_->check_async_error(what_);
  check_cuda(cudaStreamWaitEvent(compute_, done_->get(), 0), "cudaStreamWaitEvent (compute after communication)");
  finished_ = true;
  return true;
}

void NcclPendingOperation::wait() {
  const Clock::time_point since = Clock::now();
  while (!test()) pause_between_polls(since);
}

NcclPendingOperation::~NcclPendingOperation() {
  if (finished_ || state_->aborted()) return;
  const Clock::time_point since = Clock::now();
  auto next_report = since + std::chrono::seconds(10);
  try {
    while (!test()) {
      if (Clock::now() >= next_report) {
        std::fprintf(stderr,
                     "rfa: still completing %s, destroyed before wait(): its neighbours have not "
                     "finished their side (gives up at the NCCL timeout)\n",
                     what_.c_str());
        next_report += std::chrono::seconds(10);
      }
      pause_between_polls(since);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rfa: while completing an abandoned operation: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "rfa: unknown failure while completing %s\n", what_.c_str());
  }
}

}  // namespace rfa::comm::nccl
