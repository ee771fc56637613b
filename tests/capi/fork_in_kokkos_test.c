/* SPDX-License-Identifier: BSD-3-Clause */
/* A fork from inside Kokkos::initialize and Kokkos::finalize where rfa owns Kokkos (this program
 * does not initialize it): run with tests/capi/fork_in_kokkos_tool.c as the Kokkos Tools
 * library, which forks in its init and finalize callbacks. The creation (rfa initializes
 * Kokkos), a forward, the destruction and rfa_finalize (rfa finalizes Kokkos) must all return:
 * a fork taken while rfa held its Kokkos lifetime mutex left the forking thread waiting on
 * itself. The tool prints a verdict per fork; this program prints "fork_in_kokkos_test: PASS"
 * at its end. Compiled as C, under mpiexec -n 2, with alarm(60) as its own bound. */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "rfa/rfa_mpi.h"

static int failed(const char* what) {
  printf("fork_in_kokkos_test: FAIL: %s: %s\n", what, rfa_get_last_error_message());
  fflush(stdout);
  return 1;
}

int main(int argc, char** argv) {
  int size = 0;
  int64_t local = 0;
  rfa_options_t o;
  rfa_context_t ctx = NULL;
  float *x, *out, *lse;
  size_t n;
  alarm(60); /* a hang ends the program (SIGALRM), and the test with it */
  MPI_Init(&argc, &argv);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  rfa_options_init(&o);
  o.dtype = RFA_DTYPE_FLOAT32;
  o.seq_total = 16 * size;
  o.heads = 2;
  o.kv_heads = 1;
  o.head_dim = 8;
  if (rfa_context_create(MPI_COMM_WORLD, &o, &ctx) != RFA_SUCCESS) return failed("rfa_context_create");
  if (rfa_context_get_local_seq(ctx, &local) != RFA_SUCCESS) return failed("rfa_context_get_local_seq");
  n = (size_t)local * 2 * 8;
  x = calloc(n, sizeof *x);
  out = calloc(n, sizeof *out);
  lse = calloc((size_t)local * 2, sizeof *lse);
  if (rfa_forward(ctx, x, x, x, out, lse) != RFA_SUCCESS) return failed("rfa_forward");
  if (rfa_context_destroy(ctx) != RFA_SUCCESS) return failed("rfa_context_destroy");
  if (rfa_finalize() != RFA_SUCCESS) return failed("rfa_finalize");
  free(x), free(out), free(lse);
  MPI_Finalize();
  printf("fork_in_kokkos_test: PASS\n");
  return 0;
}
