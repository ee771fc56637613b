// SPDX-License-Identifier: BSD-3-Clause
// Which kernels a CUDA context's ring steps run on (docs/gpus.md): rfa's own (kernels_cuda) or
// cuDNN's fused attention (kernels_cuda/src/cudnn), chosen at creation, the same on every rank.
#pragma once

#include <string>

#include "comm/communicator.hpp"
#include "engine/ring_config.hpp"

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
/// reason; for `automatic`, cudnn when every rank can run it, else rfa.
CudaKernels choose_cuda_kernels(comm::Communicator& comm, Device device, KernelRequest request);

}  // namespace engine
}  // namespace rfa
