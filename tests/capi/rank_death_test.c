/* SPDX-License-Identifier: BSD-3-Clause */
/* A rank that dies while the others are in a collective call: under mpiexec -n 2 with the
 * runtime told to keep the survivors (OMPI_MCA_orte_enable_recovery=1,
 * OMPI_MCA_orte_abort_on_non_zero_status=0, set by ctest), rank 1 exits without MPI_Finalize
 * after the context is created, while rank 0 enters rfa_forward with a deadline of 5 s. rfa must
 * return RFA_ERROR_TIMEOUT (or RFA_ERROR_MPI, should MPI report the dead peer) within it, and
 * rank 0 must still destroy its context and finalize: ctest passes on rank 0's verdict line
 * alone, and a hang hits the test's 60 s limit. (Without those settings Open MPI's runtime
 * ends the whole job when a rank exits, and rfa is never asked.) */
#include <stdio.h>
#include <stdlib.h>

#include "rfa/rfa_mpi.h"

int main(int argc, char** argv) {
  int rank;
  rfa_options_t o;
  rfa_context_t ctx = NULL;
  int64_t L = 0;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  rfa_options_init(&o);
  o.dtype = RFA_DTYPE_FLOAT32;
  o.seq_total = 64;
  o.heads = 1;
  o.head_dim = 8;
  o.timeout_s = 5.0;
  if (rfa_context_create(MPI_COMM_WORLD, &o, &ctx) != RFA_SUCCESS) {
    fprintf(stderr, "rank %d: rfa_context_create failed: %s\n", rank, rfa_get_last_error_message());
    return 2;
  }
  if (rank == 1) {
    fprintf(stderr, "rank 1: exiting without MPI_Finalize, as a crashed rank would\n");
    exit(3);
  }
  rfa_context_get_local_seq(ctx, &L);
  {
    float* buffers = calloc((size_t)(5 * L * 8), sizeof(float));
    const rfa_result_t rc =
        rfa_forward(ctx, buffers, buffers + L * 8, buffers + 2 * L * 8, buffers + 3 * L * 8, buffers + 4 * L * 8);
    const int expected = rc == RFA_ERROR_TIMEOUT || rc == RFA_ERROR_MPI;
    free(buffers);
    if (rfa_context_destroy(ctx) != RFA_SUCCESS) {
      fprintf(stderr, "rank 0: rfa_context_destroy failed: %s\n", rfa_get_last_error_message());
      return 1;
    }
    MPI_Finalize();
    fprintf(stderr, "rank 0: %s: rfa_forward returned %d (%s)\n", expected ? "PASS" : "FAIL", (int)rc,
            rfa_get_error_string(rc));
    return expected ? 0 : 1;
  }
}
