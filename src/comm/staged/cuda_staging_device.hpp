// SPDX-License-Identifier: BSD-3-Clause
// StagingDevice over the CUDA runtime: a copy stream of its own per direction (non-blocking),
// pinned host buffers from cudaHostAlloc, and events that order the copies after the compute
// stream and the compute stream after the copies into device memory.
#pragma once

#include <memory>

#include "comm/staged/staging_device.hpp"

namespace rfa::comm {

/// On the caller's current device. Throws RFA_ERROR_CUDA when no device is usable.
std::unique_ptr<StagingDevice> make_cuda_staging_device();

}  // namespace rfa::comm
