// SPDX-License-Identifier: BSD-3-Clause
// Which kernels a CUDA context's ring steps run on (docs/gpus.md): rfa's own (kernels_cuda) or
// cuDNN's fused attention (kernels_cuda/src/cudnn), and which implementation of rfa's kernels
// (the sm_80 ones or the Hopper ones), chosen at creation, the same on every rank.
#pragma once

#include <string>

#include "comm/communicator.hpp"
#include "engine/attention_config.hpp"
#include "engine/attention_strategy.hpp"

namespace rfa {
namespace engine {

/// What the caller asks for.
enum class KernelRequest { automatic, rfa, cudnn };

/// "auto", "rfa", "cudnn".
const char* kernel_request_name(KernelRequest r);
/// "rfa", "cudnn".
const char* cuda_kernels_name(CudaKernels k);

/// Empty when this build and this rank can run cuDNN's block kernel (built with it, an engine
/// with a CUDA backend, libcudnn 9.10.2 or newer loadable); otherwise why not. Local.
std::string cudnn_unavailable_reason();

/// Collective over `comm`: the kernels of a context on `device` for `request`. Host contexts:
/// rfa (a request for cudnn throws RFA_ERROR_UNSUPPORTED). CUDA contexts: rfa when asked;
/// cudnn when asked and every rank can run it, else RFA_ERROR_UNSUPPORTED on every rank with the
/// reason; for `automatic`, cudnn where every rank can run it, else rfa: cuDNN was the fastest
/// at every shape measured (perf/RESULTS.md, "2026-12-04 — the first GPU run of every path").
/// The strategy may still take rfa's (kernels_for_strategy).
CudaKernels choose_cuda_kernels(comm::Communicator& comm, Device device, KernelRequest request);

/// The kernels a strategy of kind `kind` runs with, given the context's choice `chosen` for
/// `request`: the KV all-gather and the needed-only exchange compute on rfa's kernels, so an
/// automatic choice of cuDNN becomes rfa for them; an explicit one stays (and the strategy
/// refuses it, saying so). Local.
CudaKernels kernels_for_strategy(CudaKernels chosen, KernelRequest request, StrategyKind kind);

/// Which implementation of rfa's CUDA kernels the caller asks for.
enum class PathRequest {
  environment,  ///< RFA_CUDA_KERNEL_PATH decides (unset: automatic)
  automatic,    ///< the faster of each pass where every rank runs both (choose_cuda_path)
  sm80,
  sm90
};

/// "environment", "auto", "sm80", "sm90".
const char* path_request_name(PathRequest r);
/// "sm80", "sm90", "sm90-forward".
const char* cuda_path_name(CudaPath f);
/// "auto", "sm80" or "sm90" as a request; throws RFA_ERROR_INVALID_ARGUMENT naming `what`
/// otherwise. Local.
PathRequest parse_path_request(const std::string& text, const char* what);

/// Collective over `comm`: the kernel path of a context on `device`. CUDA contexts: sm80 or
/// sm90 as asked (kernels_cuda's rfa_cuda_resolve_path on every rank); for `automatic`,
/// sm90_forward where every rank runs the Hopper kernels (their forward was 2.1x the sm_80 one
/// on an H200, their backward 0.86x: perf/RESULTS.md, "2026-12-04 — the first GPU run of every
/// path"), else sm80. Host contexts: sm80 (unused there). Fails on every rank:
/// RFA_ERROR_UNSUPPORTED, with the reason, for sm90 on a host context or where some rank cannot
/// run it; RFA_ERROR_INVALID_ARGUMENT for a malformed RFA_CUDA_KERNEL_PATH;
/// RFA_ERROR_INVALID_USAGE when the ranks' requests differ.
CudaPath choose_cuda_path(comm::Communicator& comm, Device device, PathRequest request);

/// Collective over `comm`: on CUDA contexts, that every rank's GPU runs rfa's CUDA kernels at the
/// configuration's head dims (the dims the kernels take, the sm_80 forward's layout and the sm_80
/// backward's key tile the rank's environment asks for, then the shared memory their blocks ask
/// for against what the device gives: rfa_cuda_check_head_dims). Fails on every rank with
/// RFA_ERROR_UNSUPPORTED, saying which need some rank does not meet, or
/// RFA_ERROR_INVALID_ARGUMENT for a malformed RFA_CUDA_SM80_FORWARD_ROWS_PER_WARP or
/// RFA_CUDA_SM80_BACKWARD_KEY_TILE. Nothing on host contexts or in builds without a CUDA
/// engine (where creation refuses CUDA contexts anyway).
void require_gpu_fits_head_dims(comm::Communicator& comm, const AttentionConfig& config);

}  // namespace engine
}  // namespace rfa
