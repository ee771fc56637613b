// SPDX-License-Identifier: BSD-3-Clause
// The forward kernel for bf16 on Intel AMX tiles (Sapphire Rapids and later). Where the build
// targets AMX-BF16 (-march=native on such a CPU) and the kernel may use the tiles, flash_forward
// hands bf16 work to it; everywhere else it reports "not taken" and the portable kernel runs.
#pragma once

#include "kernels/flash_attention.hpp"
#include "kernels/simd.hpp"  // RFA_NATIVE_VECTORS

#if RFA_NATIVE_VECTORS && defined(__AMX_TILE__) && defined(__AMX_BF16__) && defined(__AVX512BF16__) && \
    defined(__linux__)
#define RFA_HOST_AMX 1
#else
#define RFA_HOST_AMX 0
#endif

namespace rfa {
namespace kernels {

/// Whether bf16 forward work would run on AMX tiles now: the build targets them, the kernel
/// asked Linux for the tile state (once per process) and got it, and the environment does not
/// say RFA_HOST_AMX=0 (read on every call, so a test can compare both kernels in one process).
bool host_amx_bf16_enabled();

/// Runs the forward on AMX tiles and returns true, or returns false without touching anything
/// when the tiles are not to be used (host_amx_bf16_enabled() false, or head_dim not a multiple
/// of 32). Arguments are checked by the caller (flash_forward).
template <class TOut>
bool flash_forward_amx(const AttentionParams& p, Tensor4<const bf16_t> q, Tensor4<const bf16_t> k,
                       Tensor4<const bf16_t> v, Tensor4<TOut> out, Tensor3<float> lse,
                       const ProgressHook& progress);

}  // namespace kernels
}  // namespace rfa
