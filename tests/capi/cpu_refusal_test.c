/* SPDX-License-Identifier: BSD-3-Clause */
/* A librfa compiled for instruction sets the CPU lacks (-march=native on another node), run on
 * QEMU's emulated CPU without them (Nehalem: no AVX, AVX2, FMA or AVX-512): every call of the C
 * ABI returns RFA_ERROR_UNSUPPORTED naming what is missing, and none stops at an illegal
 * instruction. Prints "PASS", "SKIP: ..." or "FAIL: ..." and exits 0 or 1; one process, MPI
 * initialized alone. An argument names a set the refusal must name ("LZCNT"), or with a leading
 * '!' one it must not ("!LZCNT"): the CPU's answer read for that set; with "!", a CPU that lacks
 * nothing the build uses (QEMU's most capable one, where the build machine has no AVX-512) has no
 * refusal to read: SKIP (CTest's skip). */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "rfa/rfa_mpi.h"

static int failures = 0;

static void expect(rfa_result_t got, rfa_result_t want, const char* call, const char* fragment) {
  const char* message = rfa_get_last_error_message();
  if (got != want) {
    printf("FAIL: %s returned %d, not %d: %s\n", call, (int)got, (int)want, message);
    ++failures;
  } else if (fragment != NULL && strstr(message, fragment) == NULL) {
    printf("FAIL: %s's message lacks \"%s\": %s\n", call, fragment, message);
    ++failures;
  }
}

int main(int argc, char** argv) {
  const char* named = "which this CPU lacks";
  rfa_options_t o;
  rfa_context_t context = NULL;
  int64_t local = 0;
  MPI_Init(&argc, &argv);
  if (argc > 1) {
    const int absent = argv[1][0] == '!';
    const char* set = argv[1] + absent;
    const rfa_result_t rc = rfa_options_init(&o);
    const char* message = rfa_get_last_error_message();
    if (rc == RFA_SUCCESS && absent) {
      printf("SKIP: not refused: this emulated CPU lacks nothing the build uses, so no refusal to read\n");
    } else if (rc != RFA_ERROR_UNSUPPORTED) {
      printf("FAIL: rfa_options_init returned %d, not RFA_ERROR_UNSUPPORTED: %s\n", (int)rc, message);
      ++failures;
    } else if ((strstr(message, set) != NULL) == absent) {
      printf("FAIL: the refusal %s %s: %s\n", absent ? "names" : "does not name", set, message);
      ++failures;
    } else {
      printf("PASS (the refusal %s %s)\n", absent ? "does not name" : "names", set);
    }
    MPI_Finalize();
    return failures == 0 ? 0 : 1;
  }
  expect(rfa_options_init(&o), RFA_ERROR_UNSUPPORTED, "rfa_options_init", named);
  expect(rfa_layout_local_seq(RFA_LAYOUT_ZIGZAG, 16, 1, &local), RFA_ERROR_UNSUPPORTED, "rfa_layout_local_seq", named);
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.dtype = RFA_DTYPE_FLOAT32;
  o.seq_total = 16;
  o.head_dim = 8;
  o.ring_order = RFA_RING_ORDER_IDENTITY;
  expect(rfa_context_create(MPI_COMM_WORLD, &o, &context), RFA_ERROR_UNSUPPORTED, "rfa_context_create",
         "rfa_context_create: this librfa was compiled for a CPU with");
  if (context != NULL) {
    printf("FAIL: a refused creation handed out a context\n");
    ++failures;
  }
  expect(rfa_context_destroy(NULL), RFA_ERROR_UNSUPPORTED, "rfa_context_destroy", named);
  expect(rfa_finalize(), RFA_ERROR_UNSUPPORTED, "rfa_finalize", named);
  if (failures == 0) printf("PASS (every call refused)\n");
  MPI_Finalize();
  return failures == 0 ? 0 : 1;
}
