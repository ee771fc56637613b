// SPDX-License-Identifier: BSD-3-Clause
// The plain argument types of the launchers that host-only code (api_support, the cuDNN
// path) handles too: a strided tensor, an element type, the shape of a row-wise kernel.
#pragma once

#include <cstdint>

namespace rfa_cuda {
namespace detail {

struct StridedTensor {
  void* data;
  std::int64_t batch, seq, head;  // element strides; the head dimension is contiguous
};

enum class ElementType { kBf16, kFp16, kFp32 };

struct RowwiseShape {
  int batch, seq, heads, head_dim;
};

}  // namespace detail
}  // namespace rfa_cuda
