// SPDX-License-Identifier: BSD-3-Clause
// What the host-side API files (flash_api.cu, cudnn/cudnn_attention.cpp) share: the calling
// thread's last failure message, CUDA errors as statuses, the check of a tensor's address and
// strides, and the resolution of zero strides.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "rfa_cuda/flash.h"
#include "tensor_args.hpp"

namespace rfa_cuda {
namespace detail {

/// Records a printf-style message for rfa_cuda_last_error_message() and returns `status`.
rfa_cuda_status fail(rfa_cuda_status status, const char* format, ...);

/// RFA_CUDA_SUCCESS, or RFA_CUDA_ERROR_CUDA naming `what` and the CUDA error.
rfa_cuda_status from_cuda(cudaError_t error, const char* what);

/// The calling thread's last message ("" if none yet).
const char* last_message();

/// RFA_CUDA_SUCCESS for a value of rfa_cuda_path (auto, sm80, sm90), RFA_CUDA_ERROR_INVALID_ARGUMENT
/// naming it otherwise (kernel_path.cpp).
rfa_cuda_status check_known_path(rfa_cuda_path path);

inline bool aligned16(const void* p) { return (reinterpret_cast<std::uintptr_t>(p) & 15u) == 0; }

/// A 16-bit tensor the kernels copy in 16-byte chunks (rfa's tensor-core kernels; cuDNN's graphs
/// are declared with 16-byte alignment): non-null, its base and its element strides keeping
/// every chunk aligned. RFA_CUDA_ERROR_INVALID_ARGUMENT naming it otherwise.
rfa_cuda_status check_tile_tensor(const char* name, const void* data, const rfa_cuda_strides& s);

/// The first mode along which a tensor of `batch` x `seq` x `heads` rows with strides `s` repeats
/// its elements: a zero stride over more than one index ("batch", "seq" or "head"), nullptr if
/// none. All three strides zero is the contiguous layout, not a repeat.
const char* repeated_mode(const rfa_cuda_strides& s, std::int64_t batch, std::int64_t seq, std::int64_t heads);

/// An output must not repeat along a mode: several rows would be written to the same elements,
/// in an order that varies. RFA_CUDA_ERROR_INVALID_ARGUMENT naming it and the mode otherwise.
rfa_cuda_status check_output_rows(const char* name, const rfa_cuda_strides& s, std::int64_t batch, std::int64_t seq,
                                  std::int64_t heads);

/// A TMA descriptor's strides are under 2^40 bytes (cuTensorMapEncodeTiled).
constexpr std::int64_t kTmaStrideLimitBytes = std::int64_t(1) << 40;

/// An input `t` (resolved from strides `s`, of `element_bytes` elements) as the Hopper kernels
/// read it, through a TMA descriptor built from its strides: one repeated along a mode (a
/// broadcast), or a stride of 2^40 bytes or more, is refused with RFA_CUDA_ERROR_UNSUPPORTED,
/// naming the sm80 path, which reads any strides; the stride of a mode of one index (it
/// addresses nothing), 0 or any other, becomes the contiguous layout's, which a descriptor
/// accepts (a multiple of 16 bytes, not 0, under the limit).
rfa_cuda_status sm90_input(const char* name, const rfa_cuda_strides& s, std::int64_t batch, std::int64_t seq,
                           std::int64_t heads, std::int64_t head_dim, std::size_t element_bytes, StridedTensor& t);

inline ElementType element_type(rfa_cuda_dtype t) {
  return t == RFA_CUDA_BF16 ? ElementType::kBf16 : t == RFA_CUDA_FP16 ? ElementType::kFp16 : ElementType::kFp32;
}

/// Zero strides become the contiguous [batch][seq][heads][head_dim] layout.
inline StridedTensor resolve(const void* data, rfa_cuda_strides s, std::int64_t seq, std::int64_t heads,
                             std::int64_t head_dim) {
  if (s.batch == 0 && s.seq == 0 && s.head == 0) {
    s.head = head_dim;
    s.seq = heads * head_dim;
    s.batch = seq * heads * head_dim;
  }
  return StridedTensor{const_cast<void*>(data), s.batch, s.seq, s.head};
}

}  // namespace detail
}  // namespace rfa_cuda

#define RFA_CUDA_TRY(expr)                                   \
  do {                                                       \
    const rfa_cuda_status try_status_ = (expr);              \
    if (try_status_ != RFA_CUDA_SUCCESS) return try_status_; \
  } while (0)
