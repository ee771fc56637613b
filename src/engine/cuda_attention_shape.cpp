// SPDX-License-Identifier: BSD-3-Clause
#include "engine/cuda_attention_shape.hpp"

#include "core/error.hpp"

namespace rfa {
namespace engine {

rfa_cuda_dtype cuda_dtype(rfa_dtype_t dtype) {
  return dtype == RFA_DTYPE_BFLOAT16 ? RFA_CUDA_BF16 : dtype == RFA_DTYPE_FLOAT16 ? RFA_CUDA_FP16 : RFA_CUDA_FP32;
}

rfa_cuda_position_map cuda_positions(const PositionMap& m) {
  if (m.count > 2)
    fail(RFA_ERROR_INTERNAL, "a position map of ", m.count, " segments reached the CUDA kernels (at most 2)");
  rfa_cuda_position_map out{};
  out.count = m.count;
  for (int s = 0; s < m.count; ++s) out.seg[s] = rfa_cuda_segment{m.seg[s].start, m.seg[s].stride, m.seg[s].length};
  return out;
}

rfa_cuda_attention_shape cuda_attention_shape(const kernels::AttentionParams& p, rfa_cuda_dtype dtype,
                                              const DeviceMaskPointers& mask) {
  rfa_cuda_attention_shape s{};
  s.batch = p.batch;
  s.seq_q = p.seq_q;
  s.seq_k = p.seq_k;
  s.heads = p.heads;
  s.kv_heads = p.kv_heads;
  s.head_dim = p.head_dim;
  s.value_head_dim = p.dv() != p.head_dim ? p.dv() : 0;
  s.scale = p.scale();
  s.mask = p.mask == RFA_MASK_CAUSAL ? RFA_CUDA_MASK_CAUSAL : RFA_CUDA_MASK_NONE;
  s.q_positions = cuda_positions(p.q_pos);
  s.k_positions = cuda_positions(p.k_pos);
  s.dtype = dtype;
  s.window = p.window;
  s.softcap = p.softcap;
  if (p.doc_bounds != nullptr) {
    // The engine's copy of the same list: made at context creation from config().doc_bounds.
    if (mask.doc_bounds == nullptr)
      fail(RFA_ERROR_INTERNAL, "document boundaries reached the CUDA kernels without a device copy");
    s.doc_bounds = mask.doc_bounds;
    s.doc_bound_count = p.doc_bound_count;
  }
  // Per-sequence documents, likewise from config().doc_offsets; where every entry's list is
  // empty (no boundaries at all) each entry is one document, which is no documents.
  if (p.doc_offsets != nullptr && p.doc_bound_count > 0) {
    if (mask.doc_offsets == nullptr)
      fail(RFA_ERROR_INTERNAL, "per-sequence document offsets reached the CUDA kernels without a device copy");
    s.doc_offsets = mask.doc_offsets;
  }
  if (p.ranges.on) {  // the range index, likewise from config().ranges (no band: nothing seen)
    if (p.ranges.band_count > 0 && mask.range_entries == nullptr)
      fail(RFA_ERROR_INTERNAL, "a mask given as ranges reached the CUDA kernels without a device copy");
    s.ranges = 1;
    s.range_band_begin = mask.range_band_begin;
    s.range_band_end = mask.range_band_end;
    s.range_band_offset = mask.range_band_offset;
    s.range_entries = mask.range_entries;
    s.range_band_count = p.ranges.band_count;
  }
  return s;
}

}  // namespace engine
}  // namespace rfa
