// SPDX-License-Identifier: BSD-3-Clause
// The forward kernel for bf16 on hardware bf16 products: Intel AMX tiles (Sapphire Rapids and
// later) or, without them, AVX512-BF16 dot products (AMD Zen 4 and later). Where the build
// targets one of them (-march=native on such a CPU) and it may be used, flash_forward hands
// bf16 work to it; everywhere else it reports "not taken" and the portable kernel runs.
#pragma once

#include "kernels/bf16_products.hpp"
#include "kernels/flash_attention.hpp"

namespace rfa {
namespace kernels {

/// Runs the forward on the products host_bf16_products() names and returns true, or returns
/// false without touching anything when it names none. Arguments are checked by the caller
/// (flash_forward). K and V are packed into `workspace` (flash_forward_bf16_buffers(), grown
/// when too small; without one, buffers of the call's own).
template <class TOut>
bool flash_forward_bf16(const AttentionParams& p, Tensor4<const bf16_t> q, Tensor4<const bf16_t> k,
                        Tensor4<const bf16_t> v, Tensor4<TOut> out, Tensor3<float> lse, const ProgressHook& progress,
                        ForwardWorkspace* workspace);

/// The bytes flash_forward_bf16 packs K and V into on a call with these params and storage
/// dtype: 0 where it would not be taken.
std::int64_t flash_forward_bf16_workspace_bytes(const AttentionParams& p, rfa_dtype_t dtype);

/// Its buffers in `workspace` (K and V packed for the products, every (batch, K/V head) unit one
/// after another), for forward_workspace_buffers(); empty where it would not be taken.
std::vector<WorkspaceBuffer> flash_forward_bf16_buffers(ForwardWorkspace& workspace, const AttentionParams& p,
                                                        rfa_dtype_t dtype);

}  // namespace kernels
}  // namespace rfa
