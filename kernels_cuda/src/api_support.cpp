// SPDX-License-Identifier: BSD-3-Clause
#include "api_support.hpp"

#include <locale.h>

#include <cstdarg>
#include <cstdio>

namespace rfa_cuda {
namespace detail {
namespace {
thread_local char message[512] = "";
}  // namespace

// The messages' numbers (%g) in the "C" locale whatever the program chose with setlocale (a
// decimal comma otherwise), as the rest of rfa writes them: this thread's locale is switched for
// the one call, made once; where it cannot be made, the process's.
rfa_cuda_status fail(rfa_cuda_status status, const char* format, ...) {
  static const locale_t c_numeric = newlocale(LC_NUMERIC_MASK, "C", locale_t(0));
  const locale_t before = c_numeric ? uselocale(c_numeric) : locale_t(0);
  va_list args;
  va_start(args, format);
  std::vsnprintf(message, sizeof message, format, args);
  va_end(args);
  if (before) uselocale(before);
  return status;
}

rfa_cuda_status from_cuda(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return RFA_CUDA_SUCCESS;
  return fail(RFA_CUDA_ERROR_CUDA, "%s: CUDA error %d (%s)", what, static_cast<int>(error), cudaGetErrorString(error));
}

const char* last_message() { return message; }

rfa_cuda_status check_tile_tensor(const char* name, const void* data, const rfa_cuda_strides& s) {
  if (data == nullptr) return fail(RFA_CUDA_ERROR_INVALID_ARGUMENT, "%s is NULL", name);
  if (!aligned16(data)) return fail(RFA_CUDA_ERROR_INVALID_ARGUMENT, "%s is not 16-byte aligned", name);
  if (s.batch % 8 != 0 || s.seq % 8 != 0 || s.head % 8 != 0 || s.batch < 0 || s.seq < 0 || s.head < 0)
    return fail(RFA_CUDA_ERROR_INVALID_ARGUMENT,
                "%s strides (batch %lld, seq %lld, head %lld) must be non-negative multiples of 8", name,
                static_cast<long long>(s.batch), static_cast<long long>(s.seq), static_cast<long long>(s.head));
  return RFA_CUDA_SUCCESS;
}

const char* repeated_mode(const rfa_cuda_strides& s, std::int64_t batch, std::int64_t seq, std::int64_t heads) {
  if (s.batch == 0 && s.seq == 0 && s.head == 0) return nullptr;
  if (s.batch == 0 && batch > 1) return "batch";
  if (s.seq == 0 && seq > 1) return "seq";
  if (s.head == 0 && heads > 1) return "head";
  return nullptr;
}

rfa_cuda_status check_output_rows(const char* name, const rfa_cuda_strides& s, std::int64_t batch, std::int64_t seq,
                                  std::int64_t heads) {
  if (const char* mode = repeated_mode(s, batch, seq, heads))
    return fail(RFA_CUDA_ERROR_INVALID_ARGUMENT,
                "%s has %s stride 0 over more than one index: an output's rows must not share elements "
                "(strides batch %lld, seq %lld, head %lld; all three 0 means contiguous)",
                name, mode, static_cast<long long>(s.batch), static_cast<long long>(s.seq),
                static_cast<long long>(s.head));
  return RFA_CUDA_SUCCESS;
}

rfa_cuda_status sm90_input(const char* name, const rfa_cuda_strides& s, std::int64_t batch, std::int64_t seq,
                           std::int64_t heads, std::int64_t head_dim, std::size_t element_bytes, StridedTensor& t) {
  if (const char* mode = repeated_mode(s, batch, seq, heads))
    return fail(RFA_CUDA_ERROR_UNSUPPORTED,
                "the Hopper kernels (path sm90) read %s through a TMA descriptor, which takes no %s stride of 0 "
                "(a broadcast): use the sm80 path",
                name, mode);
  // A mode of one index addresses nothing: its stride becomes the contiguous layout's.
  if (t.head == 0 || heads == 1) t.head = head_dim;
  if (t.seq == 0 || seq == 1) t.seq = heads * head_dim;
  if (t.batch == 0 || batch == 1) t.batch = seq * heads * head_dim;
  const std::int64_t limit = kTmaStrideLimitBytes / std::int64_t(element_bytes);
  if (t.batch >= limit || t.seq >= limit || t.head >= limit)
    return fail(RFA_CUDA_ERROR_UNSUPPORTED,
                "the Hopper kernels (path sm90) read %s through a TMA descriptor, whose strides must be under 2^40 "
                "bytes; %s's (batch %lld, seq %lld, head %lld elements of %zu bytes) are not: use the sm80 path",
                name, name, static_cast<long long>(t.batch), static_cast<long long>(t.seq),
                static_cast<long long>(t.head), element_bytes);
  return RFA_CUDA_SUCCESS;
}

}  // namespace detail
}  // namespace rfa_cuda
