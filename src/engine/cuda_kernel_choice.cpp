// SPDX-License-Identifier: BSD-3-Clause
#include "engine/cuda_kernel_choice.hpp"

#include "comm/agreement.hpp"
#include "core/environment.hpp"
#include "core/error.hpp"
#include "engine/engine_backends.hpp"
#include "rfa/rfa_config.h"

#if RFA_ENGINE_CUDA
#include "rfa_cuda/flash.h"
#endif
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

const char* forward_path_request_name(ForwardPathRequest r) {
  switch (r) {
    case ForwardPathRequest::environment: return "environment";
    case ForwardPathRequest::automatic: return "auto";
    case ForwardPathRequest::sm80: return "sm80";
    case ForwardPathRequest::sm90: return "sm90";
  }
  return "unknown";
}

const char* cuda_forward_name(CudaForward f) { return f == CudaForward::sm90 ? "sm90" : "sm80"; }

ForwardPathRequest parse_forward_path_request(const std::string& text, const char* what) {
  if (text == "auto") return ForwardPathRequest::automatic;
  if (text == "sm80") return ForwardPathRequest::sm80;
  if (text == "sm90") return ForwardPathRequest::sm90;
  fail(RFA_ERROR_INVALID_ARGUMENT, what, " is '", text, "'; it must be auto, sm80 or sm90");
}

namespace {

// This rank's answer for `request` (not `environment`): local.
CudaForward resolve_forward_here(ForwardPathRequest request) {
#if RFA_ENGINE_CUDA
  const rfa_cuda_path asked = request == ForwardPathRequest::sm90   ? RFA_CUDA_PATH_SM90
                              : request == ForwardPathRequest::sm80 ? RFA_CUDA_PATH_SM80
                                                                    : RFA_CUDA_PATH_AUTO;
  rfa_cuda_path chosen = RFA_CUDA_PATH_SM80;
  if (rfa_cuda_resolve_path(asked, &chosen) != RFA_CUDA_SUCCESS)
    fail(RFA_ERROR_UNSUPPORTED, "the CUDA forward path ", forward_path_request_name(request), " was asked for, but ",
         rfa_cuda_last_error_message());
  return chosen == RFA_CUDA_PATH_SM90 ? CudaForward::sm90 : CudaForward::sm80;
#else
  if (request == ForwardPathRequest::sm90)
    fail(RFA_ERROR_UNSUPPORTED,
         "the CUDA forward path sm90 was asked for, but this build's engine has no CUDA "
         "backend (rfa was built against a Kokkos without CUDA)");
  return CudaForward::sm80;
#endif
}

}  // namespace

CudaForward choose_cuda_forward(comm::Communicator& comm, Device device, ForwardPathRequest request) {
  CudaForward chosen = CudaForward::sm80;
  ForwardPathRequest asked = request;
  comm::check_everywhere(comm, [&] {
    if (asked == ForwardPathRequest::environment) {
      const std::string text = env_text(Env::cuda_forward_path);
      asked = text.empty() ? ForwardPathRequest::automatic
                           : parse_forward_path_request(text, env_name(Env::cuda_forward_path));
    }
    if (device == Device::cuda) {
      chosen = resolve_forward_here(asked);
    } else if (asked == ForwardPathRequest::sm90) {
      fail(RFA_ERROR_UNSUPPORTED, "the CUDA forward path sm90 runs on CUDA contexts only (options.device is the host)");
    }
  });
  comm::require_same_everywhere(comm, {{"CUDA forward path (RFA_CUDA_FORWARD_PATH)", std::int64_t(asked)}});
  return chosen;
}

}  // namespace engine
}  // namespace rfa
