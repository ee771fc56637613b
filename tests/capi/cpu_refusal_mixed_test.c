/* SPDX-License-Identifier: BSD-3-Clause */
/* A job whose ranks run on two kinds of CPU: rank 0 on QEMU's emulated Nehalem, which this
 * -march=native librfa refuses, the others natively. rfa_context_create (then
 * rfa_context_create_fint) returns RFA_ERROR_UNSUPPORTED on every rank: the refused rank with its
 * own reason, the others with that reason relayed and the rank named, long before the creation's
 * deadline (options.timeout_s, 60 s here) that they met while the refused rank took no part.
 * Prints "PASS" or "FAIL: ..." on each rank and exits 0 or 1. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "rfa/rfa_mpi.h"

int main(int argc, char** argv) {
  int rank = 0, failures = 0;
  rfa_options_t o;
  rfa_context_t context = NULL;
  double waited = 0.0;
  rfa_result_t rc;
  const char* message;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  /* rfa_options_init is refused on rank 0: the fields are set by hand, alike on every rank. */
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.version = RFA_OPTIONS_VERSION;
  o.dtype = RFA_DTYPE_FLOAT32;
  o.seq_total = 16;
  o.head_dim = 8;
  o.ring_order = RFA_RING_ORDER_IDENTITY;
  o.timeout_s = 60.0;
  for (int fortran = 0; fortran < 2; ++fortran) {
    const char* call = fortran ? "rfa_context_create_fint" : "rfa_context_create";
    waited = MPI_Wtime();
    rc = fortran ? rfa_context_create_fint(MPI_Comm_c2f(MPI_COMM_WORLD), &o, &context)
                 : rfa_context_create(MPI_COMM_WORLD, &o, &context);
    waited = MPI_Wtime() - waited;
    message = rfa_get_last_error_message();
    if (rc != RFA_ERROR_UNSUPPORTED) {
      printf("FAIL: rank %d: %s returned %d, not RFA_ERROR_UNSUPPORTED: %s\n", rank, call, (int)rc, message);
      ++failures;
    } else if (strstr(message, "this librfa was compiled for a CPU with") == NULL ||
               (rank != 0 && strstr(message, "rank(s) 0 of the communicator") == NULL)) {
      printf("FAIL: rank %d: %s's message does not give rank 0's reason: %s\n", rank, call, message);
      ++failures;
    }
    if (context != NULL) {
      printf("FAIL: rank %d: a failed %s handed out a context\n", rank, call);
      ++failures;
    }
    /* A bound on waiting, not a speed: the deadline is 60 s, QEMU's start about a second. */
    if (waited > 30.0) {
      printf("FAIL: rank %d: %s took %.1f s: the ranks waited for the deadline\n", rank, call, waited);
      ++failures;
    }
  }
  if (failures == 0) printf("PASS: rank %d: %s\n", rank, message);
  rfa_finalize();
  MPI_Finalize();
  return failures == 0 ? 0 : 1;
}
