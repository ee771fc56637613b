// SPDX-License-Identifier: BSD-3-Clause
#include "forward_rows_per_warp.hpp"

#include <cstdlib>
#include <cstring>

#include "api_support.hpp"

namespace rfa_cuda {
namespace detail {

rfa_cuda_status forward_rows_per_warp(const char* text, std::int64_t value_dim, int& rows) {
  if (text == nullptr || *text == '\0') {
    rows = 16;
    return RFA_CUDA_SUCCESS;
  }
  if (std::strcmp(text, "16") != 0 && std::strcmp(text, "32") != 0)
    return fail(RFA_CUDA_ERROR_INVALID_ARGUMENT, "%s is 16 or 32 (query rows a warp of the sm80 forward), not \"%s\"",
                kForwardRowsPerWarpEnv, text);
  rows = text[0] == '3' ? 32 : 16;
  if (rows == 32 && value_dim > kWideForwardValueDimMax)
    return fail(RFA_CUDA_ERROR_UNSUPPORTED, "%s=32 takes value head dims up to %d, not %lld: unset it or set 16",
                kForwardRowsPerWarpEnv, kWideForwardValueDimMax, static_cast<long long>(value_dim));
  return RFA_CUDA_SUCCESS;
}

rfa_cuda_status forward_rows_per_warp_from_environment(std::int64_t value_dim, int& rows) {
  return forward_rows_per_warp(std::getenv(kForwardRowsPerWarpEnv), value_dim, rows);
}

}  // namespace detail
}  // namespace rfa_cuda
