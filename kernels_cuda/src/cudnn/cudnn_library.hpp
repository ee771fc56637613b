// SPDX-License-Identifier: BSD-3-Clause
// cuDNN loaded at run time: the cuDNN frontend is compiled with
// NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING and calls cuDNN through the handle opened here, so a
// build of rfa runs with or without cuDNN installed.
#pragma once

#include <cstdint>

#include "rfa_cuda/flash.h"

namespace rfa_cuda {
namespace cudnn {

/// Opens cuDNN once per process: `file` (nullptr or "": libcudnn.so.9 on the loader's search
/// path). RFA_CUDA_ERROR_UNSUPPORTED, with the reason as the thread's message, when it is
/// missing, lacks cudnnGetVersion or is older than RFA_CUDNN_MIN_VERSION; the result of the
/// first call is kept (and its message repeated) for every later one, whatever file it names.
rfa_cuda_status load_library(const char* file);

/// The loaded cuDNN's cudnnGetVersion(), 0 when none is loaded.
std::int64_t loaded_version();

}  // namespace cudnn
}  // namespace rfa_cuda
