/* SPDX-License-Identifier: BSD-3-Clause */
/* A collective call after MPI_Finalize must return RFA_ERROR_INVALID_USAGE saying so, not make
 * MPI abort the job (every MPI call but a few queries is erroneous then). Under mpiexec -n 2:
 * a context is created, MPI is finalized, then every collective call of the C API is made on
 * it; destroying it afterwards still succeeds (nothing of MPI is touched). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rfa/rfa_mpi.h"

static int expect_refused(rfa_result_t rc, const char* call) {
  const char* message = rfa_get_last_error_message();
  const int ok = rc == RFA_ERROR_INVALID_USAGE && strstr(message, "already finalized") != NULL;
  if (!ok) printf("after_finalize_test: %s gave %d (%s)\n", call, (int)rc, message);
  return ok;
}

int main(int argc, char** argv) {
  rfa_options_t o;
  rfa_context_t ctx = NULL;
  rfa_context_t other = (rfa_context_t)&o; /* not NULL: the refused creation must set it so */
  int64_t L = 0;
  size_t n;
  float *q, *k, *v, *out, *lse, *global;
  int ok = 1;
  MPI_Init(&argc, &argv);
  rfa_options_init(&o);
  o.dtype = RFA_DTYPE_FLOAT32;
  o.ring_order = RFA_RING_ORDER_IDENTITY;
  o.seq_total = 32;
  o.heads = 2;
  o.kv_heads = 2;
  o.head_dim = 8;
  if (rfa_context_create(MPI_COMM_WORLD, &o, &ctx) != RFA_SUCCESS) {
    printf("after_finalize_test: rfa_context_create failed: %s\n", rfa_get_last_error_message());
    return 1;
  }
  rfa_context_get_local_seq(ctx, &L);
  n = (size_t)(L * o.heads * o.head_dim);
  q = calloc(n, sizeof(float));
  k = calloc(n, sizeof(float));
  v = calloc(n, sizeof(float));
  out = calloc(n, sizeof(float));
  lse = calloc((size_t)(L * o.heads), sizeof(float));
  global = calloc((size_t)(o.seq_total * o.heads * o.head_dim), sizeof(float));
  MPI_Finalize();

  ok &= expect_refused(rfa_forward(ctx, q, k, v, out, lse), "rfa_forward");
  ok &= expect_refused(rfa_backward(ctx, q, k, v, out, q, lse, out, k, v), "rfa_backward");
  ok &= expect_refused(rfa_allgather_bshd(ctx, o.heads, q, global), "rfa_allgather_bshd");
  ok &= expect_refused(rfa_context_create(MPI_COMM_WORLD, &o, &other), "rfa_context_create");
  if (other != NULL) {
    printf("after_finalize_test: the refused rfa_context_create left its handle set\n");
    ok = 0;
  }
  /* The context created before MPI_Finalize: destroyed without MPI, and then gone. */
  if (rfa_context_destroy(ctx) != RFA_SUCCESS) {
    printf("after_finalize_test: rfa_context_destroy failed: %s\n", rfa_get_last_error_message());
    ok = 0;
  }
  if (rfa_context_get_local_seq(ctx, &L) != RFA_ERROR_INVALID_ARGUMENT) {
    printf("after_finalize_test: the destroyed context still answers a query\n");
    ok = 0;
  }
  printf("after_finalize_test: %s\n", ok ? "passed" : "FAILED");
  free(q), free(k), free(v), free(out), free(lse), free(global);
  return ok ? 0 : 1;
}
