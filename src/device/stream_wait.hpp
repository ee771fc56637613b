// SPDX-License-Identifier: BSD-3-Clause
// Waiting for a CUDA stream under the context's deadline: the host polls the stream instead of
// blocking inside CUDA (cudaStreamSynchronize has no deadline), so a kernel or copy that never
// ends fails the call with RFA_ERROR_TIMEOUT instead of hanging it (docs/reliability.md).
#pragma once

#include <string>

namespace rfa::device {

/// Waits until the work queued on `stream` (a cudaStream_t; nullptr: the legacy default stream)
/// has completed, polling it from the host for at most `timeout_s` seconds (0: no deadline).
/// Throws RFA_ERROR_CUDA where the stream reports an error (cleared; the message names `what`),
/// and RFA_ERROR_TIMEOUT naming `what` where work is still pending at the deadline: a kernel or
/// copy that never ends (the caller's own work queued on the stream before rfa's, a stuck
/// device). Nothing is cancelled then: the pending work may still read and write its buffers,
/// so the caller must keep them (never free them: freeing device memory waits for the device).
void wait_for_stream(void* stream, double timeout_s, const std::string& what);

/// The same for the work before a recorded event (a cudaEvent_t): waits until the event has
/// completed.
void wait_for_event(void* event, double timeout_s, const std::string& what);

}  // namespace rfa::device
