// SPDX-License-Identifier: BSD-3-Clause
// One NCCL communicator and its communication stream, shared by the NcclCommunicator and
// every operation it started (so an Exchange that outlives its communicator stays valid).
//
// The communicator is nonblocking (ncclConfig_t::blocking = 0): no NCCL call can block the
// host indefinitely, and every wait here polls ncclCommGetAsyncError with a deadline. Any
// error or timeout aborts the communicator (ncclCommAbort) and makes it unusable; later
// calls fail with RFA_ERROR_NCCL naming the first failure.
#pragma once

#include <nccl.h>

#include <string>

#include "core/polling.hpp"
#include "device/cuda_handles.hpp"
#include "rfa/rfa.h"

namespace rfa::comm::nccl {

class NcclCommState {
 public:
  /// Makes a communication stream on the current device (which the NCCL communicator will
  /// use too). Throws RFA_ERROR_CUDA.
  NcclCommState(int device, double timeout_seconds);
  /// Finalizes and destroys a healthy communicator (bounded by the timeout; on error or
  /// timeout it aborts instead); an aborted one was already released. Never throws.
  ~NcclCommState();
  NcclCommState(const NcclCommState&) = delete;
  NcclCommState& operator=(const NcclCommState&) = delete;

  /// Collective over the NCCL ranks: ncclCommInitRankConfig (nonblocking), then waits for
  /// it. Throws RFA_ERROR_NCCL or RFA_ERROR_TIMEOUT (after aborting what was started).
  void init(int nranks, const ncclUniqueId& id, int rank);

  /// After an NCCL call that may have returned ncclInProgress: polls until the communicator
  /// has settled. Throws (after aborting) on an error or once `deadline` passes.
  void wait_until_settled(const std::string& what, Clock::time_point deadline);

  /// Throws (after aborting) if NCCL reports an asynchronous error; ncclInProgress is fine.
  void check_async_error(const std::string& what);

  /// Checks the result of an NCCL call that enqueues work: on failure the communicator is
  /// aborted (a half-issued group would leave the peers mismatched) and RFA_ERROR_NCCL thrown.
  void check_call(ncclResult_t rc, const char* call);

  /// Throws RFA_ERROR_NCCL if the communicator was aborted or never initialized.
  void require_usable(const std::string& what) const;

  /// Aborts the communicator (idempotent, never throws) and remembers why.
  void abort(const std::string& reason) noexcept;

  /// abort(message), then throws rfa::Error(code, message + what happened to the comm).
  [[noreturn]] void abort_and_fail(rfa_result_t code, const std::string& message);

  bool aborted() const { return aborted_; }
  ncclComm_t comm() const { return comm_; }
  cudaStream_t stream() const { return stream_.get(); }
  /// Recorded on the compute stream and waited on by the communication stream before each
  /// operation (reused: each wait captures the event as last recorded).
  cudaEvent_t compute_ready_event() const { return compute_ready_.get(); }
  int device() const { return device_; }
  double timeout_seconds() const { return timeout_seconds_; }

 private:
  int device_;
  double timeout_seconds_;
  device::CudaStream stream_;
  device::CudaEvent compute_ready_;
  ncclComm_t comm_ = nullptr;
  bool aborted_ = false;
  std::string abort_reason_;
};

}  // namespace rfa::comm::nccl
