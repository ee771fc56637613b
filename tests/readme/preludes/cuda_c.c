/* SPDX-License-Identifier: BSD-3-Clause */
/* Wraps docs/gpus.md's CUDA C fragment: what it assumes exists (docs/architecture.md §7). */
#include <stdio.h>
#include <cuda_runtime.h>
#include <rfa/rfa_mpi.h>

/* As in the README's C program. */
#define RFA_CHECK(call)                                                              \
  do {                                                                               \
    rfa_result_t rc_ = (call);                                                       \
    if (rc_ != RFA_SUCCESS) {                                                        \
      fprintf(stderr, "%s: %s\n", #call, rfa_get_last_error_message());              \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                  \
    }                                                                                \
  } while (0)

void readme_cuda_fragment(int local_rank, int devices, void* q, void* k, void* v, void* out,
                          void* dout, void* dq, void* dk, void* dv, float* lse);
void readme_cuda_fragment(int local_rank, int devices, void* q, void* k, void* v, void* out,
                          void* dout, void* dq, void* dk, void* dv, float* lse) {
@FRAGMENT@
}
