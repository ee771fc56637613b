/* SPDX-License-Identifier: BSD-3-Clause */
/* rfa never initializes MPI: creating a context before MPI_Init must fail with
 * RFA_ERROR_INVALID_USAGE and say so, from C, without touching MPI. Runs without mpiexec. */
#include <stdio.h>
#include <string.h>

#include "rfa/rfa_mpi.h"

int main(void) {
  rfa_options_t o;
  rfa_context_t ctx = NULL;
  rfa_result_t rc;
  int ok;
  rfa_options_init(&o);
  o.seq_total = 16;
  ctx = (rfa_context_t)1; /* garbage: the failure must leave it NULL */
  rc = rfa_context_create(MPI_COMM_WORLD, &o, &ctx);
  ok = rc == RFA_ERROR_INVALID_USAGE && ctx == NULL && strstr(rfa_get_last_error_message(), "not initialized") != NULL;
  ctx = (rfa_context_t)1;
  rc = rfa_context_create_fint(0, &o, &ctx);
  ok = ok && rc == RFA_ERROR_INVALID_USAGE && ctx == NULL;
  printf("mpi_uninitialized_test: %s (%s: %s)\n", ok ? "passed" : "FAILED", rfa_get_error_string(rc),
         rfa_get_last_error_message());
  return ok ? 0 : 1;
}
