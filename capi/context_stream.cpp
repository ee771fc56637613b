// SPDX-License-Identifier: BSD-3-Clause
// rfa_context_set_stream / rfa_context_synchronize: how a CUDA context's device work is
// ordered with the caller's (docs/architecture.md §8). The engine enqueues every kernel and
// copy on the caller's stream and returns without synchronizing the device; a new stream waits
// on the device for the calls queued on the previous one (device/stream_order.hpp).
#include <exception>

#include "collective_call.hpp"
#include "context.hpp"
#include "core/error.hpp"
#include "core/kept_for_process.hpp"
#include "engine/engine_backends.hpp"
#include "firewall.hpp"

#if RFA_ENGINE_CUDA
#include <cuda_runtime_api.h>

#include "device/stream_wait.hpp"
#endif

namespace rfa {
namespace capi {
namespace {

rfa_result_t set_stream(rfa_context_s& c, void* stream) {
  require_usable(c);
  if (c.options.device != RFA_DEVICE_CUDA) {
    fail(RFA_ERROR_INVALID_USAGE, "the context is RFA_DEVICE_HOST; only RFA_DEVICE_CUDA contexts take a CUDA stream");
  }
#if RFA_ENGINE_CUDA
  // Even to the same handle: a stream destroyed since may have given its handle to a new one.
  c.stream_order.switch_to(stream);
#endif
  c.engine->set_cuda_stream(stream);
  c.comm->set_compute_stream(stream);
  return RFA_SUCCESS;
}

rfa_result_t synchronize(rfa_context_s& c) {
  require_usable(c);
  wait_for_context_stream_in(c, "rfa_context_synchronize");
  return RFA_SUCCESS;
}

}  // namespace

void wait_for_context_stream(const rfa_context_s& c, const std::string& what) {
  if (c.options.device != RFA_DEVICE_CUDA || !c.engine) return;
#if RFA_ENGINE_CUDA
  device::wait_for_stream(c.engine->cuda_stream(), c.timeout_s, what);
#else
  (void)what;
#endif
}

void wait_for_last_call(const rfa_context_s& c, const std::string& what) {
  if (c.options.device != RFA_DEVICE_CUDA) return;
#if RFA_ENGINE_CUDA
  c.stream_order.wait_for_last_call(c.timeout_s, what);
#else
  (void)what;
#endif
}

void keep_device_state_for_process(rfa_context_s& c) noexcept {
  // Reachable from a static where there is memory to record them, leaked where not: never freed.
  const auto keep = [](auto* p) noexcept {
    try {
      keep_for_process(p);
    } catch (...) {
    }
  };
  keep(c.engine.release());
  keep(c.comm.release());
#if RFA_ENGINE_CUDA
  try {
    keep(new engine::StreamExec(c.sinks_exec));  // a Kokkos::Cuda instance frees memory as it ends
  } catch (...) {
  }
#endif
}

void wait_for_context_stream_in(rfa_context_s& c, const char* call) {
  on_timeout([&] { wait_for_context_stream(c, call); },
             [&](const Error& e) { make_unusable(c, call, e.code(), e.what()); });
}

// The engine and the transport synchronize their stream before they free device memory, and
// the caller's stream need only outlive the calls (rfa.h): the legacy default stream always
// exists, and the event the last call recorded outlives the stream it was recorded on.
void leave_callers_stream(rfa_context_s& c) noexcept {
  if (c.options.device != RFA_DEVICE_CUDA || !c.engine) return;
#if RFA_ENGINE_CUDA
  try {
    c.stream_order.switch_to(nullptr);
  } catch (const std::exception&) {
    cudaGetLastError();
    cudaDeviceSynchronize();  // the last call's end could not be waited for on the device
    cudaGetLastError();
  }
  c.engine->set_cuda_stream(nullptr);
  if (c.comm) c.comm->set_compute_stream(nullptr);
#endif
}

}  // namespace capi
}  // namespace rfa

extern "C" {

RFA_API rfa_result_t rfa_context_set_stream(rfa_context_t context, void* cuda_stream) {
  return rfa::capi::guard(__func__,
                          [&] { return rfa::capi::set_stream(rfa::capi::context_ref(context), cuda_stream); });
}

RFA_API rfa_result_t rfa_context_synchronize(rfa_context_t context) {
  return rfa::capi::guard(__func__, [&] { return rfa::capi::synchronize(rfa::capi::context_ref(context)); });
}

}  // extern "C"
