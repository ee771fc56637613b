// SPDX-License-Identifier: BSD-3-Clause
// The Hopper backward's launcher (backward_sm90.cu, compiled for sm_90a only, built when
// CUTLASS's headers are found: kernels_cuda/CMakeLists.txt).
#pragma once

#include <cuda_runtime_api.h>

#include "kernel_args.hpp"

namespace rfa_cuda {
namespace hopper {

// detail::launch_flash_backward's contract with atomic_dq (dQ added into the fp32 dq_accum), on
// an sm_90 device; the deterministic mode (atomic_dq false) is cudaErrorInvalidValue.
cudaError_t launch_flash_backward_sm90(const detail::BackwardArgs& args, detail::ElementType dtype,
                                       cudaStream_t stream);

}  // namespace hopper
}  // namespace rfa_cuda
