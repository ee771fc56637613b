// SPDX-License-Identifier: BSD-3-Clause
// What the Fortran test cannot get from rfa itself: an independent float64 reference
// (tests/reference) and the C header's constants, both through plain bind(c) functions.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "reference_attention.hpp"
#include "rfa/rfa.h"

extern "C" {

// Forward and backward of the whole (unsharded) problem. Arrays are row-major
// q/dout/out/dq [B][S][H][D], k/v/dk/dv [B][S][Hkv][D], lse [B][H][S]: Fortran's q(D,H,S,B).
void fortran_test_reference(std::int64_t batch, std::int64_t seq, std::int64_t heads, std::int64_t kv_heads,
                            std::int64_t head_dim, int causal, const float* q, const float* k, const float* v,
                            const float* dout, float* out, float* lse, float* dq, float* dk, float* dv) {
  rfa::reference::Problem p;
  p.batch = batch;
  p.seq_q = p.seq_k = seq;
  p.heads = heads;
  p.kv_heads = kv_heads;
  p.head_dim = head_dim;
  p.causal = causal != 0;
  auto widen = [](const float* x, std::int64_t n) { return std::vector<double>(x, x + n); };
  const auto dq64 = widen(q, p.q_size()), dk64 = widen(k, p.kv_size()), dv64 = widen(v, p.kv_size()),
             ddo = widen(dout, p.q_size());
  std::vector<double> o, l, gq, gk, gv;
  rfa::reference::forward(p, dq64, dk64, dv64, o, l);
  rfa::reference::backward(p, dq64, dk64, dv64, ddo, gq, gk, gv);
  auto narrow = [](const std::vector<double>& x, float* y) {
    for (std::size_t i = 0; i < x.size(); ++i) y[i] = float(x[i]);
  };
  narrow(o, out);
  narrow(l, lse);
  narrow(gq, dq);
  narrow(gk, dk);
  narrow(gv, dv);
}

// The C values the Fortran module must mirror, in a fixed order, then sizeof(rfa_options_t).
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
                              std::int64_t(offsetof(rfa_options_t, ulysses_degree))};
  const int n = int(sizeof all / sizeof all[0]);
  for (int i = 0; i < n && i < capacity; ++i) values[i] = all[i];
  return n;
}

}  // extern "C"
