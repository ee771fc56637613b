// SPDX-License-Identifier: BSD-3-Clause
// The forward kernel for bf16 on Intel AMX tiles (Sapphire Rapids and later). Where the build
// targets AMX-BF16 (-march=native on such a CPU) and the kernel may use the tiles, flash_forward
// hands bf16 work to it; everywhere else it reports "not taken" and the portable kernel runs.
#pragma once

#include "kernels/amx_tiles.hpp"
#include "kernels/flash_attention.hpp"

namespace rfa {
namespace kernels {

/// Runs the forward on AMX tiles and returns true, or returns false without touching anything
/// when the tiles are not to be used (host_amx_bf16_enabled() false, or head_dim not a multiple
/// of 32). Arguments are checked by the caller (flash_forward).
template <class TOut>
bool flash_forward_amx(const AttentionParams& p, Tensor4<const bf16_t> q, Tensor4<const bf16_t> k,
                       Tensor4<const bf16_t> v, Tensor4<TOut> out, Tensor3<float> lse,
                       const ProgressHook& progress);

/// The bytes flash_forward_amx allocates on a call with these params and storage dtype: 0 where
/// it would not be taken.
std::int64_t flash_forward_amx_workspace_bytes(const AttentionParams& p, rfa_dtype_t dtype);

}  // namespace kernels
}  // namespace rfa
