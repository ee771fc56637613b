/* SPDX-License-Identifier: BSD-3-Clause */
/* Wraps docs/variants.md's value head dim fragment: the options, the context and this rank's
   shards (q, k of head_dim values a head; v, out of value_head_dim) it assumes. */
#include <rfa/rfa_mpi.h>

rfa_result_t readme_value_dims_fragment(rfa_options_t o, const void* q, const void* k, const void* v,
                                        const void* v_global, void* v_local, void* out, float* lse);
rfa_result_t readme_value_dims_fragment(rfa_options_t o, const void* q, const void* k, const void* v,
                                        const void* v_global, void* v_local, void* out, float* lse) {
  rfa_context_t ctx = NULL;
@FRAGMENT@
  return rfa_context_destroy(ctx);
}
