// SPDX-License-Identifier: BSD-3-Clause
// The Hopper forward's launcher (forward_sm90.cu, compiled for sm_90a only, built when CUTLASS's
// headers are found: kernels_cuda/CMakeLists.txt).
#pragma once

#include <cuda_runtime_api.h>

#include "kernel_args.hpp"

namespace rfa_cuda {
namespace hopper {

// The same contract as detail::launch_flash_forward, on an sm_90 device.
cudaError_t launch_flash_forward_sm90(const detail::ForwardArgs& args, detail::ElementType dtype, cudaStream_t stream);

}  // namespace hopper
}  // namespace rfa_cuda
