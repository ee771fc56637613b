// SPDX-License-Identifier: BSD-3-Clause
// One NCCL operation in flight (a ring exchange or a collective): its completion is an event
// recorded on the communication stream after the operation.
//
// test() and wait() both answer on the host, by polling that event (cudaEventQuery) and the
// communicator's asynchronous error state (ncclCommGetAsyncError); neither ever blocks in a
// CUDA or NCCL call. Once the event has completed, they also make the compute stream wait on
// it, so kernels queued on the compute stream afterwards see the received data even if the
// host did not order them itself. An error, or the timeout (counted from the start of the
// operation), aborts the communicator and throws RFA_ERROR_NCCL or RFA_ERROR_TIMEOUT.
#pragma once

#include <memory>
#include <string>

#include "comm/communicator.hpp"
#include "comm/nccl/nccl_comm_state.hpp"
#include "core/polling.hpp"
#include "device/cuda_handles.hpp"

namespace rfa::comm::nccl {

class NcclPendingOperation final : public detail::PendingExchange {
 public:
  /// `done` must already be recorded on the communication stream after the operation;
  /// `compute` is the stream that must see its results. `what` names it in messages.
  NcclPendingOperation(std::shared_ptr<NcclCommState> state, std::unique_ptr<device::CudaEvent> done,
                       cudaStream_t compute, std::string what, Clock::time_point started);
  /// If unfinished, polls it to completion (reporting on stderr every 10 s) or, once the
  /// timeout passes, aborts the communicator. Never throws.
  ~NcclPendingOperation() override;

  /// True once the operation has completed on the device; throws on error or timeout.
  bool test() override;
  /// Blocks the host until the operation completed on the device (see the file comment).
  void wait() override;

 private:
  std::shared_ptr<NcclCommState> state_;
  std::unique_ptr<device::CudaEvent> done_;
  cudaStream_t compute_;
  std::string what_;
  Clock::time_point deadline_;
  bool finished_ = false;
};

}  // namespace rfa::comm::nccl
