// SPDX-License-Identifier: BSD-3-Clause
// The backward kernel for bf16 on hardware bf16 products: Intel AMX tiles
// (kernels/amx_tiles.hpp) or, without them, AVX512-BF16 dot products (kernels/bf16_dot.hpp).
// Where the build targets one of them and it may be used, flash_backward_accumulate hands bf16
// work to it; everywhere else it reports "not taken" and the portable kernel runs.
#pragma once

#include "kernels/bf16_products.hpp"
#include "kernels/flash_attention.hpp"

namespace rfa {
namespace kernels {

/// dq += dQ, dk += dK, dv += dV on the products host_bf16_products() names and true, or false
/// without touching anything when it names none. Arguments are checked by the caller
/// (flash_backward_accumulate). Q and dO are packed into `workspace`
/// (flash_backward_bf16_buffers(), grown when too small; without one, a buffer of the call's own).
bool flash_backward_bf16(const AttentionParams& p, Tensor4<const bf16_t> q, Tensor4<const bf16_t> k,
                         Tensor4<const bf16_t> v, Tensor4<const bf16_t> dout, Tensor3<const float> lse,
                         Tensor3<const float> delta, Tensor4<float> dq, Tensor4<float> dk, Tensor4<float> dv,
                         const ProgressHook& progress, BackwardWorkspace* workspace);

/// Bytes flash_backward_bf16 packs Q^T and dO^T into for a call, 0 where it is not taken: its
/// part of flash_backward_workspace_bytes().
std::int64_t flash_backward_bf16_workspace_bytes(const AttentionParams& p, rfa_dtype_t dtype);

/// Its buffer in `workspace` (every (batch, K/V head) unit's packed queries one after another),
/// for backward_workspace_buffers(); empty where it would not be taken.
std::vector<WorkspaceBuffer> flash_backward_bf16_buffers(BackwardWorkspace& workspace, const AttentionParams& p,
                                                         rfa_dtype_t dtype);

}  // namespace kernels
}  // namespace rfa
