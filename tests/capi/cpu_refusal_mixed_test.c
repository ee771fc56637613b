/* SPDX-License-Identifier: BSD-3-Clause */
/* A job whose ranks run on two kinds of CPU: rank 1 on QEMU's emulated Nehalem, which this
 * -march=native librfa refuses, ranks 0 and 2 natively. Three creations, each with a deadline of
 * 60 s (options.timeout_s), which the native ranks met while the refused rank took no part:
 *   - rfa_context_create, then rfa_context_create_fint: RFA_ERROR_UNSUPPORTED on every rank, the
 *     refused rank with its own reason, the others with that reason relayed, naming rank 1;
 *   - rfa_context_create where rank 0 also fails, on its own arguments (a NULL output pointer):
 *     rank 0 is the lowest failing rank, so the refused rank receives rank 0's reason instead of
 *     sending its own; rank 2 fails with rank 0's code and reason, the refused rank with its own
 *     refusal.
 * Each well before the deadline. With the argument "intercomm", every rank emulated: a creation
 * over an intercommunicator (rank 0 against ranks 1 and 2), which the creation refuses before its
 * agreement, returns at once on every rank, the refused ranks posting no collective on it.
 * Prints "PASS" or "FAIL: ..." on each rank and exits 0 or 1. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "rfa/rfa_mpi.h"

static int failures = 0;

static void expect(int rank, const char* call, rfa_result_t got, rfa_result_t want, const char* fragment) {
  const char* message = rfa_get_last_error_message();
  if (got != want) {
    printf("FAIL: rank %d: %s returned %d, not %d: %s\n", rank, call, (int)got, (int)want, message);
    ++failures;
  } else if (strstr(message, fragment) == NULL) {
    printf("FAIL: rank %d: %s's message lacks \"%s\": %s\n", rank, call, fragment, message);
    ++failures;
  }
}

int main(int argc, char** argv) {
  int rank = 0, refused = 0, refused_rank = -1;
  rfa_options_t o;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (argc > 1 && strcmp(argv[1], "intercomm") == 0) {
    MPI_Comm half, inter;
    rfa_context_t context = NULL;
    double waited;
    rfa_result_t rc;
    MPI_Comm_split(MPI_COMM_WORLD, rank == 0, rank, &half);
    MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, rank == 0 ? 1 : 0, 7, &inter);
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.timeout_s = 60.0;
    waited = MPI_Wtime();
    rc = rfa_context_create(inter, &o, &context);
    waited = MPI_Wtime() - waited;
    expect(rank, "rfa_context_create", rc, RFA_ERROR_UNSUPPORTED, "this librfa was compiled for a CPU with");
    /* A bound on waiting, not a speed: the deadline is 60 s. */
    if (waited > 30.0) {
      printf("FAIL: rank %d: the creation over an intercommunicator took %.1f s\n", rank, waited);
      ++failures;
    }
    MPI_Comm_free(&inter);
    MPI_Comm_free(&half);
    if (failures == 0) printf("PASS: rank %d\n", rank);
    MPI_Finalize();
    return failures == 0 ? 0 : 1;
  }
  /* The emulated rank is the one whose rfa_options_init is refused; it must be rank 1. */
  refused = rfa_options_init(&o) == RFA_ERROR_UNSUPPORTED;
  MPI_Allreduce(refused ? &rank : &refused_rank, &refused_rank, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (refused_rank != 1) {
    printf("FAIL: rank %d: the refused rank is %d, not 1 (launch rank 1 on QEMU's Nehalem)\n", rank, refused_rank);
    MPI_Finalize();
    return 1;
  }
  /* Set by hand, alike on every rank: rfa_options_init is refused on rank 1. */
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.version = RFA_OPTIONS_VERSION;
  o.dtype = RFA_DTYPE_FLOAT32;
  o.seq_total = 16;
  o.head_dim = 8;
  o.ring_order = RFA_RING_ORDER_IDENTITY;
  o.timeout_s = 60.0;
  for (int step = 0; step < 3; ++step) {
    const char* call = step == 1 ? "rfa_context_create_fint" : "rfa_context_create";
    rfa_context_t context = NULL;
    rfa_result_t rc;
    double waited = MPI_Wtime();
    rfa_context_t* out = step == 2 && rank == 0 ? NULL : &context;
    rc = step == 1 ? rfa_context_create_fint(MPI_Comm_c2f(MPI_COMM_WORLD), &o, out)
                   : rfa_context_create(MPI_COMM_WORLD, &o, out);
    waited = MPI_Wtime() - waited;
    if (refused) {
      expect(rank, call, rc, RFA_ERROR_UNSUPPORTED, "this librfa was compiled for a CPU with");
    } else if (step < 2) {
      expect(rank, call, rc, RFA_ERROR_UNSUPPORTED, "rank(s) 1 of the communicator");
      expect(rank, call, rc, RFA_ERROR_UNSUPPORTED, "rank 1: this librfa was compiled for a CPU with");
    } else if (rank == 0) {
      expect(rank, call, rc, RFA_ERROR_INVALID_ARGUMENT, "output pointer");
    } else {
      expect(rank, call, rc, RFA_ERROR_INVALID_ARGUMENT, "rank(s) 0, 1 of the communicator");
      expect(rank, call, rc, RFA_ERROR_INVALID_ARGUMENT, "rank 0: context (the output pointer) is NULL");
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
  if (failures == 0) printf("PASS: rank %d\n", rank);
  rfa_finalize();
  MPI_Finalize();
  return failures == 0 ? 0 : 1;
}
