// SPDX-License-Identifier: BSD-3-Clause
#include "argument_checks.hpp"

#include <cfloat>
#include <cmath>
#include <cstdlib>

#include "api_support.hpp"

namespace rfa_cuda {
namespace detail {
namespace {

bool aligned_to(const void* p, std::size_t bytes) { return reinterpret_cast<std::uintptr_t>(p) % bytes == 0; }

rfa_cuda_status check_int64_array(const char* name, const void* data) {
  if (!aligned_to(data, alignof(std::int64_t)))
    return fail(RFA_CUDA_ERROR_INVALID_ARGUMENT, "%s at %p is not 8-byte aligned (int64_t values)", name, data);
  return RFA_CUDA_SUCCESS;
}

}  // namespace

rfa_cuda_status check_position_map(const char* name, const rfa_cuda_position_map& map, std::int64_t seq) {
  if (map.count == 0) return RFA_CUDA_SUCCESS;
  if (map.count != 1 && map.count != 2)
    return fail(RFA_CUDA_ERROR_INVALID_ARGUMENT, "%s.count is %d; it must be 0, 1 or 2", name, map.count);
  std::int64_t total = 0;
  for (int i = 0; i < map.count; ++i) {
    const rfa_cuda_segment& s = map.seg[i];
    if (s.stride < 1 || s.length < 1)
      return fail(RFA_CUDA_ERROR_INVALID_ARGUMENT, "%s.seg[%d] has stride %lld and length %lld; both must be >= 1",
                  name, i, static_cast<long long>(s.stride), static_cast<long long>(s.length));
    if (s.start < -(INT64_C(1) << 60) || s.start > (INT64_C(1) << 60) || s.stride > (INT64_C(1) << 30) ||
        s.length > (INT64_C(1) << 40))
      return fail(RFA_CUDA_ERROR_INVALID_ARGUMENT,
                  "%s.seg[%d] (start %lld, stride %lld, length %lld) is out of range: |start| <= 2^60, stride <= "
                  "2^30, length <= 2^40",
                  name, i, static_cast<long long>(s.start), static_cast<long long>(s.stride),
                  static_cast<long long>(s.length));
    total += s.length;
  }
  if (total != seq)
    return fail(RFA_CUDA_ERROR_INVALID_ARGUMENT, "%s covers %lld rows but the sequence has %lld", name,
                static_cast<long long>(total), static_cast<long long>(seq));
  return RFA_CUDA_SUCCESS;
}

rfa_cuda_status check_common_shape(const rfa_cuda_attention_shape& s) {
  if (s.batch < 1 || s.seq_q < 1 || s.seq_k < 1 || s.heads < 1 || s.kv_heads < 1 || s.head_dim < 1)
    return fail(RFA_CUDA_ERROR_INVALID_ARGUMENT,
                "batch %lld, seq_q %lld, seq_k %lld, heads %lld, kv_heads %lld, head_dim %lld must all be >= 1",
                static_cast<long long>(s.batch), static_cast<long long>(s.seq_q), static_cast<long long>(s.seq_k),
                static_cast<long long>(s.heads), static_cast<long long>(s.kv_heads),
                static_cast<long long>(s.head_dim));
  if (s.heads % s.kv_heads != 0)
    return fail(RFA_CUDA_ERROR_INVALID_ARGUMENT, "heads (%lld) is not a multiple of kv_heads (%lld)",
                static_cast<long long>(s.heads), static_cast<long long>(s.kv_heads));
  if (s.value_head_dim < 0)
    return fail(RFA_CUDA_ERROR_INVALID_ARGUMENT, "value_head_dim %lld must be >= 0 (0: head_dim)",
                static_cast<long long>(s.value_head_dim));
  if (s.dtype != RFA_CUDA_BF16 && s.dtype != RFA_CUDA_FP16 && s.dtype != RFA_CUDA_FP32)
    return fail(RFA_CUDA_ERROR_INVALID_ARGUMENT, "dtype %d is not an rfa_cuda_dtype", static_cast<int>(s.dtype));
  if (s.mask != RFA_CUDA_MASK_NONE && s.mask != RFA_CUDA_MASK_CAUSAL)
    return fail(RFA_CUDA_ERROR_INVALID_ARGUMENT, "mask %d is not an rfa_cuda_mask", static_cast<int>(s.mask));
  if (s.window < 0)
    return fail(RFA_CUDA_ERROR_INVALID_ARGUMENT, "window %lld must be >= 0 (0: none)",
                static_cast<long long>(s.window));
  if (s.doc_bound_count < 0 || s.doc_bound_count == 1 || (s.doc_bound_count > 0 && s.doc_bounds == nullptr))
    return fail(RFA_CUDA_ERROR_INVALID_ARGUMENT,
                "doc_bounds: %lld values at %p; give documents + 1 boundaries (>= 2) in device memory, or 0 and NULL",
                static_cast<long long>(s.doc_bound_count), static_cast<const void*>(s.doc_bounds));
  if (s.doc_bound_count > 0) RFA_CUDA_TRY(check_int64_array("doc_bounds", s.doc_bounds));
  if (s.doc_offsets != nullptr) {
    if (s.doc_bound_count == 0)
      return fail(RFA_CUDA_ERROR_INVALID_ARGUMENT,
                  "doc_offsets points into doc_bounds, which is empty: give the boundaries (doc_bounds, "
                  "doc_bound_count) beside the offsets, or no offsets");
    RFA_CUDA_TRY(check_int64_array("doc_offsets", s.doc_offsets));
  }
  if (!(s.softcap >= 0.f) || !std::isfinite(s.softcap))
    return fail(RFA_CUDA_ERROR_INVALID_ARGUMENT, "softcap %g must be finite and >= 0 (0: none)",
                static_cast<double>(s.softcap));
  // The kernels scale in the log2 domain: scale x log2(e) must stay within fp32 too.
  if (!(s.scale >= 0.f) || !std::isfinite(s.scale) || s.scale > FLT_MAX / 1.4426950408889634f)
    return fail(RFA_CUDA_ERROR_INVALID_ARGUMENT,
                "scale %g must be >= 0 (0: 1/sqrt(d)) and, times log2(e), within fp32 (at most %g)",
                static_cast<double>(s.scale), static_cast<double>(FLT_MAX / 1.4426950408889634f));
  if (s.ranges != 0) {
    if (s.range_band_count < 0 ||
        (s.range_band_count > 0 && (s.range_band_begin == nullptr || s.range_band_end == nullptr ||
                                    s.range_band_offset == nullptr || s.range_entries == nullptr)))
      return fail(
          RFA_CUDA_ERROR_INVALID_ARGUMENT,
          "ranges: %lld bands; give the index's band arrays and entries in device memory (NULL only with 0 bands)",
          static_cast<long long>(s.range_band_count));
    if (s.range_band_count > 0) {
      RFA_CUDA_TRY(check_int64_array("range_band_begin", s.range_band_begin));
      RFA_CUDA_TRY(check_int64_array("range_band_end", s.range_band_end));
      RFA_CUDA_TRY(check_int64_array("range_band_offset", s.range_band_offset));
      RFA_CUDA_TRY(check_int64_array("range_entries", s.range_entries));
    }
  }
  RFA_CUDA_TRY(check_position_map("q_positions", s.q_positions, s.seq_q));
  return check_position_map("k_positions", s.k_positions, s.seq_k);
}

rfa_cuda_status check_rowwise_tensor(const char* call, const char* name, const void* data,
                                     const rfa_cuda_strides& strides, std::size_t element_bytes, bool output,
                                     std::int64_t batch, std::int64_t seq, std::int64_t heads) {
  RFA_CUDA_TRY(check_device_array(call, name, data, element_bytes));
  if (strides.batch < 0 || strides.seq < 0 || strides.head < 0)
    return fail(RFA_CUDA_ERROR_INVALID_ARGUMENT,
                "%s: %s has strides (batch %lld, seq %lld, head %lld); none may be negative", call, name,
                static_cast<long long>(strides.batch), static_cast<long long>(strides.seq),
                static_cast<long long>(strides.head));
  if (output)
    if (const char* mode = repeated_mode(strides, batch, seq, heads))
      return fail(RFA_CUDA_ERROR_INVALID_ARGUMENT,
                  "%s: %s has %s stride 0 over more than one index: an output's rows must not share elements "
                  "(strides batch %lld, seq %lld, head %lld; all three 0 means contiguous)",
                  call, name, mode, static_cast<long long>(strides.batch), static_cast<long long>(strides.seq),
                  static_cast<long long>(strides.head));
  return RFA_CUDA_SUCCESS;
}

rfa_cuda_status check_device_array(const char* call, const char* name, const void* data, std::size_t element_bytes) {
  if (data == nullptr) return fail(RFA_CUDA_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", call, name);
  if (!aligned_to(data, element_bytes))
    return fail(RFA_CUDA_ERROR_INVALID_ARGUMENT, "%s: %s at %p is not aligned to its %zu-byte elements", call, name,
                data, element_bytes);
  return RFA_CUDA_SUCCESS;
}

}  // namespace detail
}  // namespace rfa_cuda
