// SPDX-License-Identifier: BSD-3-Clause
#include "sm80_layout_settings.hpp"

#include <cstdlib>
#include <string>

#include "api_support.hpp"

namespace rfa_cuda {
namespace detail {
namespace {

// One of a setting's two spellings (`small` or `large`, the numbers they say) into `value`:
// `fallback` where `text` is NULL or empty; any other text is refused, naming the variable and
// what it sets.
rfa_cuda_status two_way_setting(const char* variable, const char* what, const char* text, int small, int large,
                                int fallback, int& value) {
  if (text == nullptr || *text == '\0') {
    value = fallback;
    return RFA_CUDA_SUCCESS;
  }
  for (const int choice : {small, large})
    if (std::to_string(choice) == text) {
      value = choice;
      return RFA_CUDA_SUCCESS;
    }
  return fail(RFA_CUDA_ERROR_INVALID_ARGUMENT, "%s is %d or %d (%s), not \"%s\"", variable, small, large, what, text);
}

// Whether a tile of 128 keys takes the head dims, by their Q/K and V columns together.
bool wide_backward_takes(std::int64_t columns) { return columns <= kWideBackwardColumnsMax; }

}  // namespace

rfa_cuda_status forward_rows_per_warp(const char* text, std::int64_t value_dim, int& rows) {
  RFA_CUDA_TRY(two_way_setting(kForwardRowsPerWarpEnv, "query rows a warp of the sm80 forward", text, 16, 32, 0, rows));
  if (rows == 32 && value_dim > kWideForwardValueDimMax)
    return fail(RFA_CUDA_ERROR_UNSUPPORTED, "%s=32 takes value head dims up to %d, not %lld: unset it or set 16",
                kForwardRowsPerWarpEnv, kWideForwardValueDimMax, static_cast<long long>(value_dim));
  return RFA_CUDA_SUCCESS;
}

rfa_cuda_status forward_rows_per_warp_from_environment(std::int64_t value_dim, int& rows) {
  return forward_rows_per_warp(std::getenv(kForwardRowsPerWarpEnv), value_dim, rows);
}

int default_forward_rows_per_warp(std::int64_t head_dim, std::int64_t value_dim, int compute_major) {
  return compute_major >= kWideForwardDefaultComputeMajor && head_dim <= kWideForwardDefaultHeadDimMax &&
                 value_dim <= kWideForwardDefaultHeadDimMax
             ? 32
             : 16;
}

int other_forward_rows_per_warp(std::int64_t head_dim, std::int64_t value_dim, int compute_major) {
  const int other = default_forward_rows_per_warp(head_dim, value_dim, compute_major) == 32 ? 16 : 32;
  return other == 32 && value_dim > kWideForwardValueDimMax ? 0 : other;
}

rfa_cuda_status backward_key_tile(const char* text, std::int64_t head_dim, std::int64_t value_dim, int& keys) {
  const std::int64_t columns = head_dim + value_dim;
  RFA_CUDA_TRY(two_way_setting(kBackwardKeyTileEnv, "keys a CTA of the sm80 backward", text, 64, 128,
                               default_backward_key_tile(head_dim, value_dim), keys));
  if (keys == 128 && !wide_backward_takes(columns))
    return fail(RFA_CUDA_ERROR_UNSUPPORTED,
                "%s=128 takes head dims whose Q/K and V columns add up to at most %d (one head dim up to 128), not "
                "%lld + %lld: unset it or set 64",
                kBackwardKeyTileEnv, kWideBackwardColumnsMax, static_cast<long long>(head_dim),
                static_cast<long long>(value_dim));
  return RFA_CUDA_SUCCESS;
}

rfa_cuda_status backward_key_tile_from_environment(std::int64_t head_dim, std::int64_t value_dim, int& keys) {
  return backward_key_tile(std::getenv(kBackwardKeyTileEnv), head_dim, value_dim, keys);
}

int default_backward_key_tile(std::int64_t head_dim, std::int64_t value_dim) {
  return head_dim + value_dim <= kWideBackwardDefaultColumns ? 128 : 64;
}

int other_backward_key_tile(std::int64_t head_dim, std::int64_t value_dim) {
  const int other = default_backward_key_tile(head_dim, value_dim) == 128 ? 64 : 128;
  return other == 128 && !wide_backward_takes(head_dim + value_dim) ? 0 : other;
}

}  // namespace detail
}  // namespace rfa_cuda
