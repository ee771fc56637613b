// SPDX-License-Identifier: BSD-3-Clause
// What the Fortran test cannot get from rfa itself: an independent float64 reference
// (tests/reference) and the C header's constants, both through plain bind(c) functions.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "reference_attention.hpp"
#include "rfa/rfa.h"
#include "rfa/rfa_config.h"

namespace {

// Forward and backward of the whole problem in float64, narrowed to the caller's fp32 arrays;
// with `sinks` (heads values, or nullptr) in the softmax and their gradient in `dsinks`; scores
// soft-capped at `softcap` (0: none); V, dout, out and dv of `value_dim` values a head (0: head_dim).
void reference(std::int64_t batch, std::int64_t seq, std::int64_t heads, std::int64_t kv_heads, std::int64_t head_dim,
               int causal, const float* sinks, const float* q, const float* k, const float* v, const float* dout,
               float* out, float* lse, float* dq, float* dk, float* dv, float* dsinks, double softcap = 0.0,
               std::int64_t value_dim = 0) {
  rfa::reference::Problem p;
  p.batch = batch;
  p.seq_q = p.seq_k = seq;
  p.heads = heads;
  p.kv_heads = kv_heads;
  p.head_dim = head_dim;
  p.value_dim = value_dim;
  p.causal = causal != 0;
  if (sinks) p.sinks.assign(sinks, sinks + heads);
  p.softcap = softcap;
  auto widen = [](const float* x, std::int64_t n) { return std::vector<double>(x, x + n); };
  const auto q64 = widen(q, p.q_size()), k64 = widen(k, p.kv_size()), v64 = widen(v, p.v_size()),
             do64 = widen(dout, p.out_size());
  std::vector<double> o, l, gq, gk, gv, gs;
  rfa::reference::forward_backward(p, q64, k64, v64, do64, o, l, gq, gk, gv, sinks ? &gs : nullptr);
  auto narrow = [](const std::vector<double>& x, float* y) {
    for (std::size_t i = 0; i < x.size(); ++i) y[i] = float(x[i]);
  };
  narrow(o, out);
  narrow(l, lse);
  narrow(gq, dq);
  narrow(gk, dk);
  narrow(gv, dv);
  if (sinks) narrow(gs, dsinks);
}

}  // namespace

extern "C" {

// Forward and backward of the whole (unsharded) problem. Arrays are row-major
// q/dout/out/dq [B][S][H][D], k/v/dk/dv [B][S][Hkv][D], lse [B][H][S]: Fortran's q(D,H,S,B).
void fortran_test_reference(std::int64_t batch, std::int64_t seq, std::int64_t heads, std::int64_t kv_heads,
                            std::int64_t head_dim, int causal, const float* q, const float* k, const float* v,
                            const float* dout, float* out, float* lse, float* dq, float* dk, float* dv) {
  reference(batch, seq, heads, kv_heads, head_dim, causal, nullptr, q, k, v, dout, out, lse, dq, dk, dv, nullptr);
}

// The same with attention sinks (one per head, fp32), also returning their gradient dsinks[H].
void fortran_test_reference_sinks(std::int64_t batch, std::int64_t seq, std::int64_t heads, std::int64_t kv_heads,
                                  std::int64_t head_dim, int causal, const float* sinks, const float* q, const float* k,
                                  const float* v, const float* dout, float* out, float* lse, float* dq, float* dk,
                                  float* dv, float* dsinks) {
  reference(batch, seq, heads, kv_heads, head_dim, causal, sinks, q, k, v, dout, out, lse, dq, dk, dv, dsinks);
}

// The same with scores soft-capped at `softcap`.
void fortran_test_reference_softcap(std::int64_t batch, std::int64_t seq, std::int64_t heads, std::int64_t kv_heads,
                                    std::int64_t head_dim, int causal, double softcap, const float* q, const float* k,
                                    const float* v, const float* dout, float* out, float* lse, float* dq, float* dk,
                                    float* dv) {
  reference(batch, seq, heads, kv_heads, head_dim, causal, nullptr, q, k, v, dout, out, lse, dq, dk, dv, nullptr,
            softcap);
}

// The same with V, dout, out and dv of `value_dim` values a head: [B][S][H][value_dim] and
// [B][S][Hkv][value_dim].
void fortran_test_reference_value_dim(std::int64_t batch, std::int64_t seq, std::int64_t heads, std::int64_t kv_heads,
                                      std::int64_t head_dim, std::int64_t value_dim, int causal, const float* q,
                                      const float* k, const float* v, const float* dout, float* out, float* lse,
                                      float* dq, float* dk, float* dv) {
  reference(batch, seq, heads, kv_heads, head_dim, causal, nullptr, q, k, v, dout, out, lse, dq, dk, dv, nullptr, 0.0,
            value_dim);
}

// The C values the Fortran module must mirror, in a fixed order (the sizes and offsets of the
// structs among them, rfa_config.h's RFA_HAVE_* last).
int fortran_test_c_constants(std::int64_t* values, int capacity) {
  const std::int64_t all[] = {RFA_SUCCESS,
                              RFA_ERROR_INVALID_ARGUMENT,
                              RFA_ERROR_INVALID_USAGE,
                              RFA_ERROR_UNSUPPORTED,
                              RFA_ERROR_OUT_OF_MEMORY,
                              RFA_ERROR_INTERNAL,
                              RFA_ERROR_MPI,
                              RFA_ERROR_NCCL,
                              RFA_ERROR_CUDA,
                              RFA_ERROR_HWLOC,
                              RFA_ERROR_KOKKOS,
                              RFA_ERROR_VERSION_MISMATCH,
                              RFA_ERROR_TIMEOUT,
                              RFA_ERROR_CALL_MISMATCH,
                              RFA_ERROR_NONFINITE,
                              RFA_VALUE_CHECKS_DEFAULT,
                              RFA_VALUE_CHECKS_OFF,
                              RFA_VALUE_CHECKS_ON,
                              RFA_CUDA_KERNELS_DEFAULT,
                              RFA_CUDA_KERNELS_AUTO,
                              RFA_CUDA_KERNELS_RFA,
                              RFA_CUDA_KERNELS_CUDNN,
                              RFA_DTYPE_FLOAT32,
                              RFA_DTYPE_BFLOAT16,
                              RFA_DTYPE_FLOAT16,
                              RFA_MASK_NONE,
                              RFA_MASK_CAUSAL,
                              RFA_LAYOUT_CONTIGUOUS,
                              RFA_LAYOUT_ZIGZAG,
                              RFA_LAYOUT_STRIPE,
                              RFA_RING_ORDER_DEFAULT,
                              RFA_RING_ORDER_IDENTITY,
                              RFA_RING_ORDER_TOPOLOGY,
                              RFA_RING_ORDER_FILE,
                              RFA_STRATEGY_RING,
                              RFA_STRATEGY_ULYSSES,
                              RFA_STRATEGY_ALLGATHER,
                              RFA_STRATEGY_HYBRID,
                              RFA_STRATEGY_AUTO,
                              RFA_VERSION_MAJOR,
                              RFA_VERSION_MINOR,
                              RFA_VERSION_PATCH,
                              RFA_OPTIONS_VERSION,
                              std::int64_t(sizeof(rfa_options_t)),
                              std::int64_t(offsetof(rfa_options_t, softmax_scale)),
                              std::int64_t(offsetof(rfa_options_t, head_dim)),
                              std::int64_t(offsetof(rfa_options_t, ulysses_degree)),
                              RFA_MASK_RANGES,
                              RFA_RANGE_FULL,
                              RFA_RANGE_CAUSAL,
                              RFA_RANGE_ANTICAUSAL,
                              RFA_RANGE_BAND,
                              std::int64_t(sizeof(rfa_mask_range_t)),
                              std::int64_t(offsetof(rfa_mask_range_t, kind)),
                              std::int64_t(offsetof(rfa_options_t, mask_ranges)),
                              std::int64_t(offsetof(rfa_options_t, value_head_dim)),
                              RFA_LAYOUT_BALANCED,
                              RFA_STRATEGY_NEEDED,
                              RFA_DEVICE_HOST,
                              RFA_DEVICE_CUDA,
                              RFA_TRANSPORT_DEFAULT,
                              RFA_TRANSPORT_MPI,
                              RFA_TRANSPORT_NCCL,
                              RFA_HAVE_CUDA,
                              RFA_HAVE_CUDA_KERNELS,
                              RFA_HAVE_CUDNN,
                              RFA_HAVE_NCCL,
                              RFA_HAVE_MPI,
                              RFA_HAVE_HWLOC,
                              RFA_HAVE_FORTRAN,
                              RFA_VERSION_CODE};
  const int n = int(sizeof all / sizeof all[0]);
  for (int i = 0; i < n && i < capacity; ++i) values[i] = all[i];
  return n;
}

// RFA_VERSION_STRING, which the Fortran module's parameter of that name must equal.
const char* fortran_test_c_version_string() { return RFA_VERSION_STRING; }

// The offset of every field of rfa_options_t, then of rfa_mask_range_t, in declaration order:
// the Fortran types must put each named field at the same place.
int fortran_test_c_field_offsets(std::int64_t* values, int capacity) {
#define RFA_OPTION_AT(field) std::int64_t(offsetof(rfa_options_t, field))
#define RFA_RANGE_AT(field) std::int64_t(offsetof(rfa_mask_range_t, field))
  const std::int64_t all[] = {RFA_OPTION_AT(struct_size),
                              RFA_OPTION_AT(version),
                              RFA_OPTION_AT(layout),
                              RFA_OPTION_AT(mask),
                              RFA_OPTION_AT(dtype),
                              RFA_OPTION_AT(ring_order),
                              RFA_OPTION_AT(softmax_scale),
                              RFA_OPTION_AT(batch),
                              RFA_OPTION_AT(seq_total),
                              RFA_OPTION_AT(heads),
                              RFA_OPTION_AT(kv_heads),
                              RFA_OPTION_AT(head_dim),
                              RFA_OPTION_AT(device),
                              RFA_OPTION_AT(transport),
                              RFA_OPTION_AT(timeout_s),
                              RFA_OPTION_AT(strategy),
                              RFA_OPTION_AT(ulysses_degree),
                              RFA_OPTION_AT(window),
                              RFA_OPTION_AT(doc_boundaries),
                              RFA_OPTION_AT(doc_boundary_count),
                              RFA_OPTION_AT(check_values),
                              RFA_OPTION_AT(cuda_kernels),
                              RFA_OPTION_AT(deterministic),
                              RFA_OPTION_AT(attention_sinks),
                              RFA_OPTION_AT(softcap),
                              RFA_OPTION_AT(mask_ranges),
                              RFA_OPTION_AT(mask_range_count),
                              RFA_OPTION_AT(doc_boundary_offsets),
                              RFA_OPTION_AT(doc_boundary_offset_count),
                              RFA_OPTION_AT(value_head_dim),
                              RFA_RANGE_AT(q_begin),
                              RFA_RANGE_AT(q_end),
                              RFA_RANGE_AT(k_begin),
                              RFA_RANGE_AT(k_end),
                              RFA_RANGE_AT(band_lo),
                              RFA_RANGE_AT(band_hi),
                              RFA_RANGE_AT(kind)};
#undef RFA_OPTION_AT
#undef RFA_RANGE_AT
  const int n = int(sizeof all / sizeof all[0]);
  for (int i = 0; i < n && i < capacity; ++i) values[i] = all[i];
  return n;
}

}  // extern "C"
