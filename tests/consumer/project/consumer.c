/* A minimal application built against the installed rfa: one forward on two ranks. */
#include <stdio.h>
#include <stdlib.h>

#include <rfa/rfa_mpi.h>

int main(int argc, char** argv) {
  rfa_options_t o;
  rfa_context_t ring = NULL;
  int64_t L = 0, n;
  float *q, *out, *lse;
  int ok;
  MPI_Init(&argc, &argv);
  ok = rfa_check_version() == RFA_SUCCESS && rfa_options_init(&o) == RFA_SUCCESS;
  o.dtype = RFA_DTYPE_FLOAT32;
  o.seq_total = 64;
  o.heads = 2;
  o.kv_heads = 2;
  o.head_dim = 8;
  ok = ok && rfa_context_create(MPI_COMM_WORLD, &o, &ring) == RFA_SUCCESS;
  ok = ok && rfa_context_get_local_seq(ring, &L) == RFA_SUCCESS;
  n = L * o.heads * o.head_dim;
  q = malloc((size_t)n * sizeof(float));
  out = malloc((size_t)n * sizeof(float));
  lse = malloc((size_t)(o.heads * L) * sizeof(float));
  for (int64_t i = 0; i < n; ++i) q[i] = (float)(i % 7) * 0.1f;
  /* q serves as k and v too: inputs may alias one another. */
  ok = ok && rfa_forward(ring, q, q, q, out, lse) == RFA_SUCCESS;
  ok = ok && rfa_context_destroy(ring) == RFA_SUCCESS && rfa_finalize() == RFA_SUCCESS;
  if (!ok) fprintf(stderr, "consumer_c: %s\n", rfa_get_last_error_message());
  free(q);
  free(out);
  free(lse);
  MPI_Finalize();
  return ok ? 0 : 1;
}
