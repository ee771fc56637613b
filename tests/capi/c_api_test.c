/* SPDX-License-Identifier: BSD-3-Clause */
/* The C API from a program compiled as C99 (not C++): the header must be pure C, and a whole
 * create / forward / backward / destroy cycle must work from C. Run under mpiexec -n 2.
 *
 * The ring's results are compared with the same problem solved by a one-rank context on
 * MPI_COMM_SELF over the whole sequence (the float64 comparison lives in the C++ tests).
 * Kokkos is never initialized here, so rfa owns it: the test also checks that rfa_finalize()
 * refuses while a context lives, finalizes after, and that creation is then refused. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rfa/rfa.h"
#include "rfa/rfa_mpi.h"

#ifdef __cplusplus
#error "this test must be compiled as C"
#endif

static int failures = 0;

#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                            \
      fprintf(stderr, "\n");                                                   \
      ++failures;                                                              \
    }                                                                          \
  } while (0)

#define CHECK_OK(call)                                                                                         \
  do {                                                                                                         \
    rfa_result_t rc_ = (call);                                                                                 \
    CHECK(rc_ == RFA_SUCCESS, "%s -> %s: %s", #call, rfa_get_error_string(rc_), rfa_get_last_error_message()); \
  } while (0)

/* Deterministic values in [-1, 1), the same on every rank. */
static void fill(float* x, size_t n, unsigned seed) {
  unsigned long long s = 0x9E3779B97F4A7C15ull * (seed + 1u);
  size_t i;
  for (i = 0; i < n; ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x[i] = (float)((double)(s >> 11) / 9007199254740992.0 * 2.0 - 1.0);
  }
}

static double max_diff(const float* a, const float* b, size_t n) {
  double worst = 0.0;
  size_t i;
  for (i = 0; i < n; ++i) {
    double d = fabs((double)a[i] - (double)b[i]);
    if (d != d) return INFINITY; /* NaN */
    if (d > worst) worst = d;
  }
  return worst;
}

static rfa_options_t problem(void) {
  rfa_options_t o;
  rfa_options_init(&o);
  o.layout = RFA_LAYOUT_ZIGZAG;
  o.mask = RFA_MASK_CAUSAL;
  o.dtype = RFA_DTYPE_FLOAT32;
  o.ring_order = RFA_RING_ORDER_IDENTITY;
  o.batch = 2;
  o.seq_total = 24;
  o.heads = 4;
  o.kv_heads = 2;
  o.head_dim = 16;
  return o;
}

int main(int argc, char** argv) {
  int rank = 0, major = -1, minor = -1, patch = -1;
  rfa_options_t o;
  rfa_context_t ring = NULL, single = NULL;
  int64_t L = 0, S, B, H, Hkv, D;
  size_t q_global, kv_global, q_local, kv_local, lse_global;
  float *gq, *gk, *gv, *gdo, *gout, *glse, *gdq, *gdk, *gdv;
  float *lq, *lk, *lv, *ldo, *lout, *llse, *ldq, *ldk, *ldv, *rout, *rdq, *rdk, *rdv, *rlse;

  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);

  /* Version: macros, runtime query and the major check agree. */
  CHECK_OK(rfa_get_version(&major, &minor, &patch));
  CHECK(major == RFA_VERSION_MAJOR && minor == RFA_VERSION_MINOR && patch == RFA_VERSION_PATCH,
        "library %d.%d.%d vs header %s", major, minor, patch, RFA_VERSION_STRING);
  CHECK_OK(rfa_check_version());

  /* A language binding's own failure (rfa_report_binding_error): returned as given and reported
   * as the thread's last message; a success records nothing; a NULL message reports "". */
  CHECK(rfa_report_binding_error(RFA_ERROR_INVALID_ARGUMENT, "q has shape (3) but this context needs (4)") ==
            RFA_ERROR_INVALID_ARGUMENT,
        "the binding's code is not returned");
  CHECK(strcmp(rfa_get_last_error_message(), "q has shape (3) but this context needs (4)") == 0, "message: %s",
        rfa_get_last_error_message());
  CHECK(rfa_report_binding_error(RFA_SUCCESS, "not a failure") == RFA_SUCCESS, "a success is not returned");
  CHECK(strcmp(rfa_get_last_error_message(), "q has shape (3) but this context needs (4)") == 0,
        "a success replaced the message: %s", rfa_get_last_error_message());
  CHECK(rfa_report_binding_error(RFA_ERROR_UNSUPPORTED, NULL) == RFA_ERROR_UNSUPPORTED, "NULL message: code");
  CHECK(strcmp(rfa_get_last_error_message(), "") == 0, "NULL message: %s", rfa_get_last_error_message());

  /* Defaults, and the enum values the Fortran module mirrors. */
  CHECK_OK(rfa_options_init(&o));
  CHECK(o.struct_size == sizeof(rfa_options_t) && o.version == RFA_OPTIONS_VERSION, "struct_size %zu", o.struct_size);
  CHECK(o.layout == RFA_LAYOUT_ZIGZAG && o.mask == RFA_MASK_CAUSAL && o.dtype == RFA_DTYPE_BFLOAT16 &&
            o.ring_order == RFA_RING_ORDER_DEFAULT && o.softmax_scale == 0.0 && o.head_dim == 64 && o.seq_total == 0,
        "unexpected defaults");

  o = problem();
  S = o.seq_total;
  B = o.batch;
  H = o.heads;
  Hkv = o.kv_heads;
  D = o.head_dim;
  CHECK_OK(rfa_context_create(MPI_COMM_WORLD, &o, &ring));
  /* The one-rank context through the Fortran handle's entry point (rfa_context_create_fint). */
  CHECK_OK(rfa_context_create_fint(MPI_Comm_c2f(MPI_COMM_SELF), &o, &single));
  if (!ring || !single) {
    fprintf(stderr, "rank %d: could not create the contexts\n", rank);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  CHECK_OK(rfa_context_get_local_seq(ring, &L));

  q_global = (size_t)(B * S * H * D);
  kv_global = (size_t)(B * S * Hkv * D);
  lse_global = (size_t)(B * H * S);
  q_local = (size_t)(B * L * H * D);
  kv_local = (size_t)(B * L * Hkv * D);
  gq = malloc(q_global * sizeof(float));
  gk = malloc(kv_global * sizeof(float));
  gv = malloc(kv_global * sizeof(float));
  gdo = malloc(q_global * sizeof(float));
  gout = malloc(q_global * sizeof(float));
  glse = malloc(lse_global * sizeof(float));
  gdq = malloc(q_global * sizeof(float));
  gdk = malloc(kv_global * sizeof(float));
  gdv = malloc(kv_global * sizeof(float));
  lq = malloc(q_local * sizeof(float));
  lk = malloc(kv_local * sizeof(float));
  lv = malloc(kv_local * sizeof(float));
  ldo = malloc(q_local * sizeof(float));
  lout = malloc(q_local * sizeof(float));
  llse = malloc((size_t)(B * H * L) * sizeof(float));
  ldq = malloc(q_local * sizeof(float));
  ldk = malloc(kv_local * sizeof(float));
  ldv = malloc(kv_local * sizeof(float));
  rout = malloc(q_local * sizeof(float));
  rlse = malloc((size_t)(B * H * L) * sizeof(float));
  rdq = malloc(q_local * sizeof(float));
  rdk = malloc(kv_local * sizeof(float));
  rdv = malloc(kv_local * sizeof(float));

  fill(gq, q_global, 1);
  fill(gk, kv_global, 2);
  fill(gv, kv_global, 3);
  fill(gdo, q_global, 4);

  /* The whole problem on one rank. */
  CHECK_OK(rfa_forward(single, gq, gk, gv, gout, glse));
  CHECK_OK(rfa_backward(single, gq, gk, gv, gout, gdo, glse, gdq, gdk, gdv));

  /* The same problem on the ring, from this rank's shards. */
  CHECK_OK(rfa_scatter_bshd(ring, H, gq, lq));
  CHECK_OK(rfa_scatter_bshd(ring, Hkv, gk, lk));
  CHECK_OK(rfa_scatter_bshd(ring, Hkv, gv, lv));
  CHECK_OK(rfa_scatter_bshd(ring, H, gdo, ldo));
  memset(lout, 0xff, q_local * sizeof(float)); /* NaN poison */
  memset(ldq, 0xff, q_local * sizeof(float));
  CHECK_OK(rfa_forward(ring, lq, lk, lv, lout, llse));
  CHECK_OK(rfa_backward(ring, lq, lk, lv, lout, ldo, llse, ldq, ldk, ldv));

  CHECK_OK(rfa_scatter_bshd(ring, H, gout, rout));
  CHECK_OK(rfa_scatter_lse(ring, glse, rlse));
  CHECK_OK(rfa_scatter_bshd(ring, H, gdq, rdq));
  CHECK_OK(rfa_scatter_bshd(ring, Hkv, gdk, rdk));
  CHECK_OK(rfa_scatter_bshd(ring, Hkv, gdv, rdv));
  CHECK(max_diff(lout, rout, q_local) < 1e-5, "out differs by %g", max_diff(lout, rout, q_local));
  CHECK(max_diff(llse, rlse, (size_t)(B * H * L)) < 1e-5, "lse differs");
  CHECK(max_diff(ldq, rdq, q_local) < 1e-4, "dq differs by %g", max_diff(ldq, rdq, q_local));
  CHECK(max_diff(ldk, rdk, kv_local) < 1e-4, "dk differs by %g", max_diff(ldk, rdk, kv_local));
  CHECK(max_diff(ldv, rdv, kv_local) < 1e-4, "dv differs by %g", max_diff(ldv, rdv, kv_local));

  /* Lifetime: rfa owns Kokkos here. */
  CHECK(rfa_finalize() == RFA_ERROR_INVALID_USAGE, "rfa_finalize with live contexts must fail");
  CHECK(strstr(rfa_get_last_error_message(), "still alive") != NULL, "message: %s", rfa_get_last_error_message());
  CHECK_OK(rfa_context_destroy(ring));
  /* One context alive is as many as two. */
  CHECK(rfa_finalize() == RFA_ERROR_INVALID_USAGE, "rfa_finalize with one live context must fail");
  CHECK(strstr(rfa_get_last_error_message(), "still alive") != NULL, "message: %s", rfa_get_last_error_message());
  CHECK_OK(rfa_context_destroy(single));
  CHECK_OK(rfa_context_destroy(NULL));
  CHECK_OK(rfa_finalize());
  CHECK_OK(rfa_finalize()); /* again: nothing to do */
  ring = NULL;
  CHECK(rfa_context_create(MPI_COMM_WORLD, &o, &ring) == RFA_ERROR_INVALID_USAGE && ring == NULL,
        "create after rfa_finalize must fail");
  CHECK(strstr(rfa_get_last_error_message(), "cannot be initialized again") != NULL, "message: %s",
        rfa_get_last_error_message());

  free(gq);
  free(gk);
  free(gv);
  free(gdo);
  free(gout);
  free(glse);
  free(gdq);
  free(gdk);
  free(gdv);
  free(lq);
  free(lk);
  free(lv);
  free(ldo);
  free(lout);
  free(llse);
  free(ldq);
  free(ldk);
  free(ldv);
  free(rout);
  free(rlse);
  free(rdq);
  free(rdk);
  free(rdv);

  {
    int local = failures, total = 0;
    MPI_Allreduce(&local, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("c_api_test: %s (%d failed checks over all ranks)\n", total ? "FAILED" : "passed", total);
    MPI_Finalize();
    return total ? 1 : 0;
  }
}
