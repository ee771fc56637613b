// SPDX-License-Identifier: BSD-3-Clause
// The arguments every entry point of the kernels-level API checks before anything reaches a
// device: what a shape asks of any block kernel (rfa's and cuDNN's alike), position maps, the
// row-wise calls' tensors, and device arrays' alignment. Host code; each refusal is
// RFA_CUDA_ERROR_INVALID_ARGUMENT with a message naming the argument and its value.
#pragma once

#include <cstddef>
#include <cstdint>

#include "rfa_cuda/flash.h"

namespace rfa_cuda {
namespace detail {

/// A position map of `seq` rows: count 0 (positions 0 .. seq - 1), or one or two segments of
/// stride and length >= 1, |start| <= 2^60 and stride <= 2^30 (positions stay far from
/// overflow), whose lengths add up to `seq`.
rfa_cuda_status check_position_map(const char* name, const rfa_cuda_position_map& map, std::int64_t seq);

/// What any block kernel asks of `s`, whatever it computes: sizes >= 1, heads a multiple of
/// kv_heads, head_dim >= 1 and value_head_dim >= 0, a known dtype and mask, window >= 0;
/// documents as documents + 1 >= 2 boundaries at an 8-byte aligned address, or none, and
/// doc_offsets only beside them (8-byte aligned); softcap and scale finite and >= 0, with
/// scale x log2(e) within fp32; with ranges, every band array 8-byte aligned and non-null where
/// there are bands; both position maps.
rfa_cuda_status check_common_shape(const rfa_cuda_attention_shape& s);

/// A row-wise call's tensor of `batch` x `seq` x `heads` rows (strides in elements of
/// `element_bytes`; all zero: contiguous): non-null, aligned to its element, strides >= 0, and
/// for an output no stride of 0 over more than one index (rows would share elements).
rfa_cuda_status check_rowwise_tensor(const char* call, const char* name, const void* data,
                                     const rfa_cuda_strides& strides, std::size_t element_bytes, bool output,
                                     std::int64_t batch, std::int64_t seq, std::int64_t heads);

/// A device array of `element_bytes` elements (lse, delta: 4): non-null and aligned to its
/// element.
rfa_cuda_status check_device_array(const char* call, const char* name, const void* data, std::size_t element_bytes);

}  // namespace detail
}  // namespace rfa_cuda
