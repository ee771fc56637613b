// SPDX-License-Identifier: BSD-3-Clause
// Internal, validated arguments handed from the host API (flash_api.cpp) to the kernel
// launchers (*.cu). Strides are resolved (no zeros left) and lengths fit in int.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "attention_mask.cuh"
#include "score_cap.cuh"
#include "tensor_args.hpp"

namespace rfa_cuda {
namespace detail {

struct AttentionDims {
  int batch, seq_q, seq_k, heads, kv_heads, head_dim;
  int value_dim;     // of v, out, dout and dv (head_dim unless the shape says otherwise)
  float scale;       // softmax scale
  float scale_log2;  // scale * log2(e): the kernels work with exp2
  ScoreCap cap;      // soft-capped scores (score_cap.cuh)
  DeviceMask mask;
  DevicePositions q_positions, k_positions;
};

struct ForwardArgs {
  AttentionDims dims;
  StridedTensor q, k, v, out;
  bool out_fp32;
  float* lse;
  bool merge;         // out (fp32) and lse hold a running result to merge this block into
  int rows_per_warp;  // the sm_80 forward's query rows a warp: 16 or 32 (sm80_layout_settings.hpp)
};

struct BackwardArgs {
  AttentionDims dims;
  StridedTensor q, k, v, dout;
  const float* lse;
  const float* delta;
  StridedTensor dq_accum;  // fp32, accumulated with atomics (when atomic_dq)
  StridedTensor dk, dv;    // fp32 (+= or, overwrite_dkdv, overwritten) or the input dtype (overwritten)
  bool store_dkdv;         // dK, dV in the input dtype
  bool overwrite_dkdv;     // dK, dV in fp32, overwritten (RFA_CUDA_GRAD_ACCUMULATE_DQ_FP32)
  bool atomic_dq;          // false: the kernel leaves dQ to flash_backward_dq (deterministic mode)
  int key_tile;            // the sm_80 backward's keys a CTA: 64 or 128 (sm80_layout_settings.hpp)
};

// The deterministic mode's separate dQ pass (one writer per dQ row, no atomics).
struct DqArgs {
  AttentionDims dims;
  StridedTensor q, k, v, dout;
  const float* lse;
  const float* delta;
  StridedTensor dq;  // fp32 (+=) or the input dtype (overwritten)
  bool store_dq;
};

// Launchers; each returns the launch status (cudaGetLastError after the launch).
cudaError_t launch_flash_forward(const ForwardArgs& args, ElementType dtype, cudaStream_t stream);
cudaError_t launch_flash_backward(const BackwardArgs& args, ElementType dtype, cudaStream_t stream);
cudaError_t launch_flash_backward_dq(const DqArgs& args, ElementType dtype, cudaStream_t stream);

// The dynamic shared memory a block of each launcher's kernels asks for at these head dims (0: a
// pair the kernels are not built for), the backward's at its key tile.
int flash_forward_shared_bytes(int head_dim, int value_dim);
int flash_backward_shared_bytes(int head_dim, int value_dim, int key_tile);
int flash_backward_dq_shared_bytes(int head_dim, int value_dim);

cudaError_t launch_attention_delta(const RowwiseShape& shape, StridedTensor out, ElementType out_type,
                                   StridedTensor dout, ElementType dout_type, float* delta, cudaStream_t stream);
cudaError_t launch_merge_partial(const RowwiseShape& shape, StridedTensor out, float* lse, StridedTensor block_out,
                                 const float* block_lse, cudaStream_t stream);
// dst (16-bit type) <- src (fp32), both [b][s][h][d] with their strides.
cudaError_t launch_convert_from_fp32(const RowwiseShape& shape, StridedTensor src, StridedTensor dst,
                                     ElementType dst_type, cudaStream_t stream);

// Elementwise fp32 over `count` contiguous values.
cudaError_t launch_add_fp32(float* into, const float* from, std::size_t count, cudaStream_t stream);
cudaError_t launch_fill_fp32(float* data, float value, std::size_t count, cudaStream_t stream);

}  // namespace detail
}  // namespace rfa_cuda
