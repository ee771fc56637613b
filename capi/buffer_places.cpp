// SPDX-License-Identifier: BSD-3-Clause
#include "buffer_places.hpp"

#include "core/error.hpp"
#include "engine/engine_backends.hpp"

#if RFA_ENGINE_CUDA
#include "device/current_device.hpp"
#endif

namespace rfa {
namespace capi {

void check_buffer_places(rfa_device_t device, int context_device, const std::vector<Buffer>& inputs,
                         const std::vector<Buffer>& outputs) {
#if RFA_ENGINE_CUDA
  using Kind = device::PointerPlace::Kind;
  const int current = device == RFA_DEVICE_CUDA ? device::require_current_device() : -1;
  // The context's buffers, mask copies and kernels' tables are on its device: kernels launched
  // on another would fault on them (or read them over the peer link).
  if (device == RFA_DEVICE_CUDA && current != context_device) {
    fail(RFA_ERROR_INVALID_USAGE, "the current CUDA device is ", current, " but the context was created on device ",
         context_device, ": make device ", context_device, " current (cudaSetDevice) for the context's calls");
  }
  for (const std::vector<Buffer>* list : {&inputs, &outputs})
    for (const Buffer& b : *list) {
      const device::PointerPlace place = device::pointer_place(b.data);
      if (device == RFA_DEVICE_CUDA) {
        if (place.kind == Kind::host) {
          fail(RFA_ERROR_INVALID_ARGUMENT, b.name,
               " is host memory but the context is RFA_DEVICE_CUDA: pass device memory of the context's GPU "
               "(cudaMalloc, or c_devloc in Fortran), or create the context with RFA_DEVICE_HOST");
        }
        if (place.kind == Kind::device && place.device != current) {
          fail(RFA_ERROR_INVALID_ARGUMENT, b.name, " is memory of CUDA device ", place.device,
               " but the context computes on device ", current, ": pass memory of device ", current,
               " (or create a context with the device that holds the tensors current)");
        }
      } else if (place.kind == Kind::device) {
        fail(RFA_ERROR_INVALID_ARGUMENT, b.name, " is CUDA device memory (device ", place.device,
             ") but the context is RFA_DEVICE_HOST: create the context with options.device = RFA_DEVICE_CUDA, or "
             "pass host memory");
      }
    }
#else
  (void)device;
  (void)context_device;
  (void)inputs;
  (void)outputs;
#endif
}

void check_host_memory(const std::vector<Buffer>& buffers, const char* call) {
#if RFA_ENGINE_CUDA
  for (const Buffer& b : buffers) {
    const device::PointerPlace place = device::pointer_place(b.data);
    if (place.kind == device::PointerPlace::Kind::device) {
      fail(RFA_ERROR_INVALID_ARGUMENT, b.name, " is CUDA device memory (device ", place.device, "); ", call,
           " reads and writes host memory whatever the context's device: copy the tensor to the host first");
    }
  }
#else
  (void)buffers;
  (void)call;
#endif
}

}  // namespace capi
}  // namespace rfa
