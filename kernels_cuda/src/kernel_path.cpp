// SPDX-License-Identifier: BSD-3-Clause
// Which implementation of the forward and the backward runs: the sm_80 kernels everywhere, or
// the Hopper kernels (hopper/, built when CUTLASS is found: RFA_CUDA_HAVE_SM90) on compute
// capability 9.x.
#include <cuda_runtime_api.h>

#include "api_support.hpp"
#include "rfa_cuda/flash.h"

#ifndef RFA_CUDA_HAVE_SM90
#define RFA_CUDA_HAVE_SM90 0
#endif

namespace rfa_cuda {
namespace detail {

rfa_cuda_status check_known_path(rfa_cuda_path path) {
  if (path == RFA_CUDA_PATH_AUTO || path == RFA_CUDA_PATH_SM80 || path == RFA_CUDA_PATH_SM90) return RFA_CUDA_SUCCESS;
  return fail(RFA_CUDA_ERROR_INVALID_ARGUMENT, "unknown kernel path %d (auto 0, sm80 1, sm90 2)",
              static_cast<int>(path));
}

}  // namespace detail
}  // namespace rfa_cuda

extern "C" {

int rfa_cuda_sm90_built(void) { return RFA_CUDA_HAVE_SM90; }

const char* rfa_cuda_path_name(rfa_cuda_path path) {
  switch (path) {
    case RFA_CUDA_PATH_AUTO: return "auto";
    case RFA_CUDA_PATH_SM80: return "sm80";
    case RFA_CUDA_PATH_SM90: return "sm90";
  }
  return "unknown";
}

rfa_cuda_status rfa_cuda_resolve_path(rfa_cuda_path requested, rfa_cuda_path* chosen) {
  using rfa_cuda::detail::fail;
  using rfa_cuda::detail::from_cuda;
  if (chosen == nullptr) return fail(RFA_CUDA_ERROR_INVALID_ARGUMENT, "resolve_path: chosen is NULL");
  RFA_CUDA_TRY(rfa_cuda::detail::check_known_path(requested));
  if (requested != RFA_CUDA_PATH_SM90) {
    *chosen = RFA_CUDA_PATH_SM80;
    return RFA_CUDA_SUCCESS;
  }
  if (!RFA_CUDA_HAVE_SM90)
    return fail(RFA_CUDA_ERROR_UNSUPPORTED,
                "the Hopper kernels (path sm90) are not in this build: it needs CUTLASS's headers when rfa is "
                "configured (scripts/fetch_gpu_headers.sh, or CUTLASS_INCLUDE_DIR) and nvcc 12.3 or newer");
  int device = 0, major = 0, minor = 0;
  RFA_CUDA_TRY(from_cuda(cudaGetDevice(&device), "cudaGetDevice"));
  RFA_CUDA_TRY(
      from_cuda(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device), "cudaDeviceGetAttribute"));
  RFA_CUDA_TRY(
      from_cuda(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device), "cudaDeviceGetAttribute"));
  if (major != 9)
    return fail(RFA_CUDA_ERROR_UNSUPPORTED,
                "the Hopper kernels (path sm90) run on compute capability 9.x; device %d is %d.%d", device, major,
                minor);
  *chosen = RFA_CUDA_PATH_SM90;
  return RFA_CUDA_SUCCESS;
}

}  // extern "C"
