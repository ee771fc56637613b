/* SPDX-License-Identifier: BSD-3-Clause */
/* rfa_finalize in a child of fork() where rfa initialized Kokkos (this program does not, unlike
 * the GoogleTest suites' main): the Kokkos and its device state are the parent's, so the child's
 * rfa_finalize succeeds and does nothing, even with the child's copy of a context alive (in the
 * parent that is RFA_ERROR_INVALID_USAGE), and the parent then destroys its context and
 * finalizes as usual. Compiled as C, under mpiexec -n 2. Exit 0: passed. */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rfa/rfa_mpi.h"

static int failed(const char* what) {
  fprintf(stderr, "fork_finalize_test: %s: %s\n", what, rfa_get_last_error_message());
  return 1;
}

int main(int argc, char** argv) {
  int rank = 0, size = 0, bad = 0, status = 0;
  rfa_options_t o;
  rfa_context_t ctx = NULL;
  pid_t child;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  rfa_options_init(&o);
  o.dtype = RFA_DTYPE_FLOAT32;
  o.batch = 1;
  o.seq_total = 16 * size;
  o.heads = 2;
  o.kv_heads = 1;
  o.head_dim = 8;
  if (rfa_context_create(MPI_COMM_WORLD, &o, &ctx) != RFA_SUCCESS) return failed("rfa_context_create");
  child = fork();
  if (child < 0) return failed("fork");
  if (child == 0) {
    /* No MPI, no exit handlers: the child's only calls are rfa's. */
    if (rfa_finalize() != RFA_SUCCESS) _exit(failed("rfa_finalize in the child, with its copy of the context alive"));
    if (rfa_context_destroy(ctx) != RFA_SUCCESS) _exit(failed("rfa_context_destroy in the child"));
    if (rfa_finalize() != RFA_SUCCESS) _exit(failed("rfa_finalize in the child, its copy released"));
    _exit(0);
  }
  if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fprintf(stderr, "fork_finalize_test: rank %d: the child's checks failed (status %d)\n", rank, status);
    bad = 1;
  }
  /* The parent's contexts are alive: its rfa_finalize refuses, as always. */
  if (rfa_finalize() != RFA_ERROR_INVALID_USAGE) bad |= failed("rfa_finalize in the parent with a context alive");
  if (rfa_context_destroy(ctx) != RFA_SUCCESS) bad |= failed("rfa_context_destroy in the parent");
  if (rfa_finalize() != RFA_SUCCESS) bad |= failed("rfa_finalize in the parent");
  MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  if (rank == 0) printf("fork_finalize_test: %s\n", bad ? "FAILED" : "passed");
  return bad;
}
