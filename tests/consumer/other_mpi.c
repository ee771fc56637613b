/* SPDX-License-Identifier: BSD-3-Clause */
/* A program built against the other MPI family than librfa's (MPICH where librfa has Open
 * MPI's mpi.h, or the reverse), run alone (an MPI singleton): both creations must refuse with
 * RFA_ERROR_VERSION_MISMATCH, naming both families, before any collective (which would abort
 * the job on the other family's datatypes). It prints one line per creation for
 * other_mpi_test.sh: "<entry point> <code> <context is NULL: 1/0> <message>". */
#include <mpi.h>
#include <stdio.h>

#include "rfa/rfa_mpi.h"

static void report(const char* call, rfa_result_t rc, rfa_context_t ctx) {
  printf("%s %d %d %s\n", call, (int)rc, ctx == NULL, rc == RFA_SUCCESS ? "" : rfa_get_last_error_message());
  if (rc == RFA_SUCCESS) rfa_context_destroy(ctx);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  rfa_options_t o;
  rfa_options_init(&o);
  o.seq_total = 64;
  o.head_dim = 64;
  rfa_context_t ctx = (rfa_context_t)&o; /* not NULL: each creation must set it to NULL */
  rfa_result_t rc = rfa_context_create(MPI_COMM_WORLD, &o, &ctx);
  report("rfa_context_create", rc, ctx);
  ctx = (rfa_context_t)&o;
  rc = rfa_context_create_fint(MPI_Comm_c2f(MPI_COMM_WORLD), &o, &ctx);
  report("rfa_context_create_fint", rc, ctx);
  fflush(stdout);
  MPI_Finalize();
  return 0;
}
