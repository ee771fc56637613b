// SPDX-License-Identifier: BSD-3-Clause
// Whether the caller's buffers are in the memory the context computes in (docs/architecture.md
// §6): a host pointer handed to a CUDA context, or a device pointer to a host one, would make
// the kernels fault or read garbage, so both are refused before any data moves.
#pragma once

#include <vector>

#include "buffer_checks.hpp"
#include "rfa/rfa.h"

namespace rfa {
namespace capi {

/// For a ::RFA_DEVICE_CUDA context, throws RFA_ERROR_INVALID_USAGE unless the current device is
/// the context's (`context_device`). Then throws RFA_ERROR_INVALID_ARGUMENT naming the first
/// buffer in the wrong memory: for a CUDA context every buffer must be device memory of its
/// device (or managed memory); for a host context none may be device memory. Builds whose
/// engine has no CUDA backend cannot create CUDA contexts and have no device memory to detect:
/// no-op there.
void check_buffer_places(rfa_device_t device, int context_device, const std::vector<Buffer>& inputs,
                         const std::vector<Buffer>& outputs);

/// Throws RFA_ERROR_INVALID_ARGUMENT naming the first of `buffers` that is CUDA device memory:
/// for `call`s that read and write host memory whatever the context's device (the sharding
/// helpers), where a device pointer would fault. No-op in builds whose engine has no CUDA backend.
void check_host_memory(const std::vector<Buffer>& buffers, const char* call);

}  // namespace capi
}  // namespace rfa
