// SPDX-License-Identifier: BSD-3-Clause
// The order of a CUDA context's calls when the caller moves it to another stream. A context
// reuses its device buffers from call to call (the engine's workspace, the block copies), and
// a call's results are the next call's inputs, so what it queues on a new stream must come after
// what it queued on the previous one. Each call records an event on the context's stream as it
// ends; a new stream waits for the last one. An event outlives the stream it was recorded on,
// so the previous stream may be gone by then (the caller synchronized and destroyed it).
#pragma once

#include <memory>
#include <string>

namespace rfa::device {

class CudaEvent;

class StreamOrder {
 public:
  StreamOrder();
  ~StreamOrder();
  StreamOrder(const StreamOrder&) = delete;
  StreamOrder& operator=(const StreamOrder&) = delete;

  /// After a call queued its work on `stream` (a cudaStream_t; nullptr is the legacy default
  /// stream), whether the call succeeded or not. Never throws: where the event cannot be
  /// recorded, the next switch waits for the whole device instead.
  void call_queued_on(void* stream) noexcept;
  /// Before the context's next work goes to `stream`: it waits for the work of the calls queued
  /// so far, on the device (the host does not wait, unless no event could be recorded). Throws
  /// RFA_ERROR_CUDA.
  void switch_to(void* stream);
  /// Waits by the deadline (device/stream_wait.hpp; `timeout_s` 0: none) until the last call
  /// queued so far has ended on the device, without its stream (which may be gone). Returns at
  /// once where no call was recorded: none was made, or a call's end could not be recorded (then
  /// switch_to waits for the whole device). Throws RFA_ERROR_TIMEOUT naming `what`, or
  /// RFA_ERROR_CUDA.
  void wait_for_last_call(double timeout_s, const std::string& what) const;

 private:
  std::unique_ptr<CudaEvent> last_call_;  // made at the first call
  bool recorded_ = false;                 // last_call_ marks the end of the last call
  bool lost_ = false;                     // a call's end could not be recorded
};

}  // namespace rfa::device
