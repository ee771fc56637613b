// SPDX-License-Identifier: BSD-3-Clause
#include "comm/nccl/nccl_comm_state.hpp"

#include <cstdio>
#include <optional>

#include "comm/nccl/nccl_error.hpp"
#include "core/error.hpp"
#include "core/text_stream.hpp"

namespace rfa::comm::nccl {

NcclCommState::NcclCommState(int device, double timeout_seconds) : device_(device), timeout_seconds_(timeout_seconds) {}

void NcclCommState::init(int nranks, const ncclUniqueId& id, int rank) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;  // init and every later call return at once; we poll, and can abort
  const Clock::time_point start = Clock::now();
  const ncclResult_t rc = ncclCommInitRankConfig(&comm_, nranks, id, rank, &config);
  if (rc != ncclSuccess && rc != ncclInProgress) {
    // Nothing usable was created, but a handle may exist and must be released.
    if (comm_ != nullptr) abort("ncclCommInitRankConfig failed");
    throw_nccl_error(rc, "ncclCommInitRankConfig", nullptr);
  }
  wait_until_settled("ncclCommInitRankConfig (rank " + std::to_string(rank) + " of " + std::to_string(nranks) + ")",
                     deadline_after(start, timeout_seconds_));
}

void NcclCommState::wait_until_settled(const std::string& what, Clock::time_point deadline) {
  const Clock::time_point since = Clock::now();
  for (;;) {
    ncclResult_t state = ncclSuccess;
    const ncclResult_t rc = ncclCommGetAsyncError(comm_, &state);
    if (rc != ncclSuccess) abort_and_fail(RFA_ERROR_NCCL, nccl_error_message(rc, "ncclCommGetAsyncError", comm_));
    if (state == ncclSuccess) return;
    if (state != ncclInProgress) abort_and_fail(RFA_ERROR_NCCL, nccl_error_message(state, what.c_str(), comm_));
    if (Clock::now() >= deadline) {
      abort_and_fail(RFA_ERROR_TIMEOUT,
                     what + " did not complete within " + general_number(timeout_seconds_, 6) +
                         " s: are all ranks making the same calls? (options.timeout_s or RFA_NCCL_TIMEOUT_S sets the "
                         "deadline)");
    }
    pause_between_polls(since);
  }
}

void NcclCommState::check_async_error(const std::string& what) {
  ncclResult_t state = ncclSuccess;
  const ncclResult_t rc = ncclCommGetAsyncError(comm_, &state);
  if (rc != ncclSuccess) abort_and_fail(RFA_ERROR_NCCL, nccl_error_message(rc, "ncclCommGetAsyncError", comm_));
  if (state != ncclSuccess && state != ncclInProgress) {
    abort_and_fail(RFA_ERROR_NCCL, "NCCL reported an asynchronous error during " + what + ": " +
                                       nccl_error_message(state, "the communicator", comm_));
  }
}

void NcclCommState::check_call(ncclResult_t rc, const char* call) {
  if (rc == ncclSuccess || rc == ncclInProgress) return;
  abort_and_fail(RFA_ERROR_NCCL, nccl_error_message(rc, call, comm_));
}

void NcclCommState::require_usable(const std::string& what) const {
  if (aborted_) {
    fail(RFA_ERROR_NCCL, what, ": the NCCL communicator was aborted after an earlier failure (", abort_reason_,
         "); create a new communicator");
  }
  if (comm_ == nullptr) fail(RFA_ERROR_INTERNAL, what, ": the NCCL communicator was never initialized");
}

void NcclCommState::abort(const std::string& reason) noexcept {
  if (aborted_) return;
  aborted_ = true;
  try {
    abort_reason_ = reason;
  } catch (...) {
  }
  if (comm_ == nullptr) return;
  // ncclCommAbort stops this rank's kernels of the communicator and frees it; it does not
  // wait for the other ranks, which see their own errors or timeouts.
  std::optional<device::ScopedDevice> on_device;
  try {
    on_device.emplace(device_);
  } catch (...) {
    // Abort anyway: NCCL knows its device; the guard only keeps ours unchanged.
  }
  const ncclResult_t rc = ncclCommAbort(comm_);
  if (rc != ncclSuccess && rc != ncclInProgress) {
    std::fprintf(stderr, "rfa: ncclCommAbort failed: %s\n", ncclGetErrorString(rc));
  }
  comm_ = nullptr;
}

void NcclCommState::abort_and_fail(rfa_result_t code, const std::string& message) {
  abort(message);
  throw Error(code, message + " [the NCCL communicator was aborted; create a new one to continue]");
}

NcclCommState::~NcclCommState() {
  if (aborted_ || comm_ == nullptr) return;
  try {
    device::ScopedDevice on_device(device_);
    const Clock::time_point start = Clock::now();
    // Finalize flushes this rank's outstanding operations; in nonblocking mode it returns at
    // once and the communicator reports ncclInProgress until done.
    const ncclResult_t rc = ncclCommFinalize(comm_);
    if (rc != ncclSuccess && rc != ncclInProgress) throw_nccl_error(rc, "ncclCommFinalize", comm_);
    wait_until_settled("ncclCommFinalize", deadline_after(start, timeout_seconds_));
    const ncclResult_t destroyed = ncclCommDestroy(comm_);
    comm_ = nullptr;
    if (destroyed != ncclSuccess)
      std::fprintf(stderr, "rfa: ncclCommDestroy failed: %s\n", ncclGetErrorString(destroyed));
  } catch (const std::exception& e) {
    // wait_until_settled aborted already on its failures; a failed Finalize did not.
    std::fprintf(stderr, "rfa: while destroying an NCCL communicator: %s\n", e.what());
    abort("destruction failed");
  } catch (...) {
    abort("destruction failed");
  }
}

}  // namespace rfa::comm::nccl
