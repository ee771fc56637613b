// SPDX-License-Identifier: BSD-3-Clause
// How many query rows a warp of the sm_80 forward owns (flash_forward.cu): 16 (8 warps a CTA,
// the default) or 32 (4 warps, each reading a key tile once for two blocks of 16 rows), chosen
// by the environment variable RFA_CUDA_SM80_FORWARD_ROWS_PER_WARP until a GPU run has measured
// which is faster (docs/gpus.md). 32 takes value head dims up to 128: above, the accumulators of
// two blocks would not fit a thread's registers.
#pragma once

#include <cstdint>

#include "rfa_cuda/flash.h"

namespace rfa_cuda {
namespace detail {

inline constexpr const char* kForwardRowsPerWarpEnv = "RFA_CUDA_SM80_FORWARD_ROWS_PER_WARP";
inline constexpr int kWideForwardValueDimMax = 128;  // the most a forward of 32 rows a warp takes

/// The rows a warp that the variable's value `text` asks for at value head dim `value_dim`, in
/// `rows`: 16 where `text` is NULL or empty, else "16" or "32". RFA_CUDA_ERROR_INVALID_ARGUMENT
/// for any other value, RFA_CUDA_ERROR_UNSUPPORTED for 32 above a value head dim of 128, each
/// with the thread's message naming the variable.
rfa_cuda_status forward_rows_per_warp(const char* text, std::int64_t value_dim, int& rows);

/// The same for the variable as the environment holds it now.
rfa_cuda_status forward_rows_per_warp_from_environment(std::int64_t value_dim, int& rows);

}  // namespace detail
}  // namespace rfa_cuda
