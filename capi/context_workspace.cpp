// SPDX-License-Identifier: BSD-3-Clause
// rfa_context_release_workspace: the buffers a context keeps between calls (docs/memory.md)
// given back on request.
#include "collective_call.hpp"
#include "context.hpp"
#include "firewall.hpp"

namespace rfa {
namespace capi {
namespace {

rfa_result_t release_workspace(rfa_context_s& c, int64_t* released_bytes) {
  require_usable(c);
  // The device's workspace may still be in use by the queued kernels: freed only once they are
  // done, and kept where they do not end by the deadline.
  wait_for_context_stream_in(c, "rfa_context_release_workspace");
  const std::int64_t held = c.engine->held_workspace_bytes();
  c.engine->release_workspace();
  if (released_bytes) *released_bytes = held;
  return RFA_SUCCESS;
}

}  // namespace
}  // namespace capi
}  // namespace rfa

extern "C" {

RFA_API rfa_result_t rfa_context_release_workspace(rfa_context_t context, int64_t* released_bytes) {
  return rfa::capi::guard(
      __func__, [&] { return rfa::capi::release_workspace(rfa::capi::context_ref(context), released_bytes); });
}

}  // extern "C"
