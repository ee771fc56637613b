// SPDX-License-Identifier: BSD-3-Clause
// Row-wise launchers (rowwise_kernels.cu) that host-only code calls: cuDNN writes a band's output
// and gradients in the storage dtype into scratch, and these kernels fold them into the ring's
// fp32 state, one warp per (batch, head, row).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "tensor_args.hpp"

namespace rfa_cuda {
namespace detail {

/// The ring merge (rfa_cuda_merge_partial's rule) of a band's output into rows of the running
/// result. `out` (fp32) and `lse` point at the band's first row; lse rows of one (batch, head)
/// are `lse_pitch` apart. `block_out` holds the band's output in `block_type`, `block_lse` its
/// log-sum-exp, [batch][heads][shape.seq] contiguous.
cudaError_t launch_merge_band(const RowwiseShape& shape, StridedTensor out, float* lse, std::int64_t lse_pitch,
                              StridedTensor block_out, ElementType block_type, const float* block_lse,
                              cudaStream_t stream);

/// into (fp32) += from (`from_type`), both [batch][seq][heads][head_dim] with their strides.
cudaError_t launch_accumulate_band(const RowwiseShape& shape, StridedTensor into, StridedTensor from,
                                   ElementType from_type, cudaStream_t stream);

}  // namespace detail
}  // namespace rfa_cuda
