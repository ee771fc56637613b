// SPDX-License-Identifier: BSD-3-Clause
#include "device/stream_wait.hpp"

#include <cuda_runtime_api.h>

#include "collective/deadline.hpp"
#include "core/error.hpp"
#include "core/polling.hpp"

namespace rfa::device {
namespace {

/// Polls `query` (cudaStreamQuery or cudaEventQuery) until it stops answering cudaErrorNotReady
/// or the deadline passes; `pending` says what was waited for, in the timeout's message.
template <class Query>
void wait_until_done(Query&& query, double timeout_s, const std::string& what, const char* pending) {
  cudaError_t status = cudaSuccess;
  const bool settled = poll_until(
      [&] {
        status = query();
        return status != cudaErrorNotReady;
      },
      timeout_s);
  if (!settled) {
    fail(RFA_ERROR_TIMEOUT, what, ": ", pending, " did not complete within ", collective::seconds_text(timeout_s),
         " (a kernel or copy that never ends: the caller's own work queued before rfa's, or a stuck device; "
         "options.timeout_s or RFA_TIMEOUT_S sets the deadline). Its buffers stay allocated: the work may still "
         "run");
  }
  if (status != cudaSuccess) {
    cudaGetLastError();
    fail(RFA_ERROR_CUDA, what, ": the context's stream reported ", cudaGetErrorName(status), ": ",
         cudaGetErrorString(status));
  }
}

}  // namespace

void wait_for_stream(void* stream, double timeout_s, const std::string& what) {
  wait_until_done([&] { return cudaStreamQuery(static_cast<cudaStream_t>(stream)); }, timeout_s, what,
                  "the work queued on the context's CUDA stream");
}

void wait_for_event(void* event, double timeout_s, const std::string& what) {
  wait_until_done([&] { return cudaEventQuery(static_cast<cudaEvent_t>(event)); }, timeout_s, what,
                  "the context's last call (with the work queued before it)");
}

}  // namespace rfa::device
