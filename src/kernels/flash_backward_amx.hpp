// SPDX-License-Identifier: BSD-3-Clause
// The backward kernel for bf16 on Intel AMX tiles. Where the build targets AMX-BF16 and the
// kernel may use the tiles (kernels/amx_tiles.hpp), flash_backward_accumulate hands bf16 work to
// it; everywhere else it reports "not taken" and the portable kernel runs.
#pragma once

#include "kernels/amx_tiles.hpp"
#include "kernels/flash_attention.hpp"

namespace rfa {
namespace kernels {

/// dq += dQ, dk += dK, dv += dV on AMX tiles and true, or false without touching anything when
/// the tiles are not to be used (host_amx_bf16_enabled() false, or head_dim not a multiple of
/// 32). Arguments are checked by the caller (flash_backward_accumulate).
bool flash_backward_amx(const AttentionParams& p, Tensor4<const bf16_t> q, Tensor4<const bf16_t> k,
                        Tensor4<const bf16_t> v, Tensor4<const bf16_t> dout, Tensor3<const float> lse,
                        Tensor3<const float> delta, Tensor4<float> dq, Tensor4<float> dk, Tensor4<float> dv,
                        const ProgressHook& progress);

/// Bytes flash_backward_amx allocates for a call (its packed Q^T and dO^T), 0 where it is not
/// taken: the AMX part of flash_backward_workspace_bytes().
std::int64_t flash_backward_amx_workspace_bytes(const AttentionParams& p, rfa_dtype_t dtype);

}  // namespace kernels
}  // namespace rfa
