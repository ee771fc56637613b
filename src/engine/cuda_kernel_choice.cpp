// SPDX-License-Identifier: BSD-3-Clause
#include "engine/cuda_kernel_choice.hpp"

#include "comm/agreement.hpp"
#include "core/environment.hpp"
#include "core/error.hpp"
#include "engine/device_support.hpp"
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
  if (request == KernelRequest::automatic) {
    // cuDNN where every rank can run it: the fastest at every shape measured on a GPU.
    const bool everywhere = comm::min_everywhere(comm, {reason.empty() ? 1 : 0})[0] == 1;
    return everywhere ? CudaKernels::cudnn : CudaKernels::rfa;
  }
  comm::check_everywhere(comm, [&] {
    if (!reason.empty()) fail(RFA_ERROR_UNSUPPORTED, "the cuDNN kernels were asked for, but ", reason);
  });
  return CudaKernels::cudnn;
}

const char* path_request_name(PathRequest r) {
  switch (r) {
    case PathRequest::environment: return "environment";
    case PathRequest::automatic: return "auto";
    case PathRequest::sm80: return "sm80";
    case PathRequest::sm90: return "sm90";
  }
  return "unknown";
}

CudaKernels kernels_for_strategy(CudaKernels chosen, KernelRequest request, StrategyKind kind) {
  const bool rfa_only = kind == StrategyKind::allgather || kind == StrategyKind::needed;
  return chosen == CudaKernels::cudnn && request == KernelRequest::automatic && rfa_only ? CudaKernels::rfa : chosen;
}

const char* cuda_path_name(CudaPath f) {
  switch (f) {
    case CudaPath::sm80: return "sm80";
    case CudaPath::sm90: return "sm90";
    case CudaPath::sm90_forward: return "sm90-forward";
  }
  return "unknown";
}

PathRequest parse_path_request(const std::string& text, const char* what) {
  if (text == "auto") return PathRequest::automatic;
  if (text == "sm80") return PathRequest::sm80;
  if (text == "sm90") return PathRequest::sm90;
  fail(RFA_ERROR_INVALID_ARGUMENT, what, " is '", text, "'; it must be auto, sm80 or sm90");
}

namespace {

// Whether this rank runs the Hopper kernels (a build with them, a device of compute capability
// 9.x). Local.
bool hopper_runs_here() {
#if RFA_ENGINE_CUDA
  rfa_cuda_path chosen = RFA_CUDA_PATH_SM80;
  return rfa_cuda_resolve_path(RFA_CUDA_PATH_SM90, &chosen) == RFA_CUDA_SUCCESS && chosen == RFA_CUDA_PATH_SM90;
#else
  return false;
#endif
}

// This rank's answer for an explicit `request`, sm80 or sm90: local.
CudaPath resolve_path_here(PathRequest request) {
#if RFA_ENGINE_CUDA
  const rfa_cuda_path asked = request == PathRequest::sm90 ? RFA_CUDA_PATH_SM90 : RFA_CUDA_PATH_SM80;
  rfa_cuda_path chosen = RFA_CUDA_PATH_SM80;
  if (rfa_cuda_resolve_path(asked, &chosen) != RFA_CUDA_SUCCESS)
    fail(RFA_ERROR_UNSUPPORTED, "the CUDA kernel path ", path_request_name(request), " was asked for, but ",
         rfa_cuda_last_error_message());
  return chosen == RFA_CUDA_PATH_SM90 ? CudaPath::sm90 : CudaPath::sm80;
#else
  if (request == PathRequest::sm90)
    fail(RFA_ERROR_UNSUPPORTED,
         "the CUDA kernel path sm90 was asked for, but this build's engine has no CUDA "
         "backend (rfa was built against a Kokkos without CUDA)");
  return CudaPath::sm80;
#endif
}

}  // namespace

void require_gpu_fits_head_dims(comm::Communicator& comm, const AttentionConfig& config) {
  comm::check_everywhere(comm, [&] {
    if (config.device != Device::cuda) return;
    // The dims' own rule first, with its message; then what this rank's GPU can run.
    require_device_support(config.device, config.head_dim, config.dv(), config.dtype, config.layout,
                           config.softmax_scale, config.softcap);
#if RFA_ENGINE_CUDA
    const rfa_cuda_status fits = rfa_cuda_check_head_dims(config.head_dim, config.dv());
    if (fits == RFA_CUDA_ERROR_INVALID_ARGUMENT)  // the environment's layouts of the sm_80 kernels
      fail(RFA_ERROR_INVALID_ARGUMENT, "this rank's environment: ", rfa_cuda_last_error_message());
    if (fits != RFA_CUDA_SUCCESS)
      fail(RFA_ERROR_UNSUPPORTED,
           "this rank cannot run rfa's CUDA kernels at these head dims: ", rfa_cuda_last_error_message());
#endif
  });
}

CudaPath choose_cuda_path(comm::Communicator& comm, Device device, PathRequest request) {
  CudaPath chosen = CudaPath::sm80;
  PathRequest asked = request;
  comm::check_everywhere(comm, [&] {
    if (asked == PathRequest::environment) {
      const std::string text = env_text(Env::cuda_path);
      asked = text.empty() ? PathRequest::automatic : parse_path_request(text, env_name(Env::cuda_path));
    }
    if (device == Device::cuda) {
      if (asked != PathRequest::automatic) chosen = resolve_path_here(asked);  // automatic: agreed below
    } else if (asked == PathRequest::sm90) {
      fail(RFA_ERROR_UNSUPPORTED, "the CUDA kernel path sm90 runs on CUDA contexts only (options.device is the host)");
    }
  });
  comm::require_same_everywhere(comm, {{"CUDA kernel path (RFA_CUDA_KERNEL_PATH)", std::int64_t(asked)}});
  if (device == Device::cuda && asked == PathRequest::automatic) {
    // The faster of each pass, where every rank runs both: the Hopper forward, the sm_80 backward.
    const bool everywhere = comm::min_everywhere(comm, {hopper_runs_here() ? 1 : 0})[0] == 1;
    chosen = everywhere ? CudaPath::sm90_forward : CudaPath::sm80;
  }
  return chosen;
}

}  // namespace engine
}  // namespace rfa
