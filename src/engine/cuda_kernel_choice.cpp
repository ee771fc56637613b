// SPDX-License-Identifier: BSD-3-Clause
#include "engine/cuda_kernel_choice.hpp"

#include "comm/agreement.hpp"
#include "core/environment.hpp"
#include "core/error.hpp"
#include "engine/engine_backends.hpp"
#include "rfa/rfa_config.h"

#if RFA_ENGINE_CUDA && RFA_HAVE_CUDNN
#include "rfa_cuda/cudnn_attention.h"
#endif

namespace rfa {
namespace engine {

const char* kernel_request_name(KernelRequest r) {
  switch (r) {
    case KernelRequest::automatic: return "auto";
    case KernelRequest::rfa: return "rfa";
    case KernelRequest::cudnn: return "cudnn";
  }
  return "unknown";
}

const char* cuda_kernels_name(CudaKernels k) { return k == CudaKernels::cudnn ? "cudnn" : "rfa"; }

std::string cudnn_unavailable_reason() {
#if RFA_ENGINE_CUDA && RFA_HAVE_CUDNN
  if (rfa_cudnn_load(env_value(Env::cudnn_library)) != RFA_CUDA_SUCCESS)
    return std::string(rfa_cuda_last_error_message()) + " (" + env_name(Env::cudnn_library) + " names the file)";
  return "";
#elif RFA_HAVE_CUDNN
  return "this build's engine has no CUDA backend (rfa was built against a Kokkos without CUDA)";
#else
  return "this build of rfa has no cuDNN block kernel (configure with -DRFA_ENABLE_CUDNN=ON and the cuDNN "
         "frontend's headers: docs/gpus.md)";
#endif
}

CudaKernels choose_cuda_kernels(comm::Communicator& comm, Device device, KernelRequest request) {
  if (device != Device::cuda) {
    // The options are the same on every rank, so is this verdict.
    if (request == KernelRequest::cudnn)
      fail(RFA_ERROR_UNSUPPORTED, "cuDNN's block kernel runs on CUDA contexts only (options.device is the host)");
    return CudaKernels::rfa;
  }
  if (request == KernelRequest::rfa) return CudaKernels::rfa;
  const std::string reason = cudnn_unavailable_reason();
  if (request == KernelRequest::cudnn) {
    comm::check_everywhere(comm, [&] {
      if (!reason.empty()) fail(RFA_ERROR_UNSUPPORTED, "the cuDNN kernels were asked for, but ", reason);
    });
    return CudaKernels::cudnn;
  }
  const std::int64_t everywhere = comm::min_everywhere(comm, {reason.empty() ? 1 : 0})[0];
  return everywhere == 1 ? CudaKernels::cudnn : CudaKernels::rfa;
}

}  // namespace engine
}  // namespace rfa
