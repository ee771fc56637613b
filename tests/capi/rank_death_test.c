/* SPDX-License-Identifier: BSD-3-Clause */
/* A rank that dies while the others are in a collective call: under
 * mpiexec -n 2, rank 1 exits without MPI_Finalize after the context is created, while rank 0
 * enters rfa_forward with a deadline far longer than the test's own time limit. Nothing of
 * rfa's may turn this into a hang: Open MPI's runtime ends the job when a rank exits, so the
 * job fails within seconds. ctest judges by the output (rank 1 got there; creation worked)
 * and a 60 s limit, far below the 600 s deadline: a hang would hit it and fail. */
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
  o.timeout_s = 600.0;
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
    /* Reached only if MPI reports the dead peer instead of the runtime ending the job. */
    fprintf(stderr, "rank 0: rfa_forward returned %s: %s\n", rfa_get_error_string(rc), rfa_get_last_error_message());
    free(buffers);
  }
  rfa_context_destroy(ctx);
  MPI_Finalize();
  return 1; /* the job must not look successful: a rank died */
}
