/* SPDX-License-Identifier: BSD-3-Clause */
/* The Spack recipe's smoke consumer: links the installed librfa and prints its version and
 * what the build contains (rfa_config.h's macros, one NAME=0|1 a line), which the recipe
 * compares with the spec's variants. With the argument "context" it also creates a one-rank
 * (or P-rank) context over MPI_COMM_WORLD and runs one small host forward pass: with every
 * value row equal to 0.5, every output element must be 0.5 whatever the attention weights.
 *   rfa_smoke [context] */
#include <rfa/rfa_mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void check(rfa_result_t rc, const char* call) {
  if (rc != RFA_SUCCESS) {
    fprintf(stderr, "rfa_smoke: %s: %s\n", call, rfa_get_last_error_message());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}
#define CHECK(call) check((call), #call)

/* A forward pass of 16 tokens per rank, one head of 64; returns the largest |out - 0.5|. */
static float forward_deviation(void) {
  int ranks = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  rfa_options_t o;
  CHECK(rfa_options_init(&o));
  o.dtype = RFA_DTYPE_FLOAT32;
  o.seq_total = 16 * (int64_t)ranks;
  o.heads = 1;
  o.kv_heads = 1;
  o.head_dim = 64;
  rfa_context_t ring;
  CHECK(rfa_context_create(MPI_COMM_WORLD, &o, &ring));
  int64_t local = 0;
  CHECK(rfa_context_get_local_seq(ring, &local));
  size_t n = (size_t)local * 64;
  float *q = malloc(n * sizeof *q), *k = malloc(n * sizeof *k), *v = malloc(n * sizeof *v),
        *out = malloc(n * sizeof *out), *lse = malloc((size_t)local * sizeof *lse);
  for (size_t i = 0; i < n; ++i) {
    q[i] = (float)(i % 7) / 7.0f;
    k[i] = (float)(i % 5) / 5.0f;
    v[i] = 0.5f;
  }
  CHECK(rfa_forward(ring, q, k, v, out, lse));
  float worst = 0.0f;
  for (size_t i = 0; i < n; ++i) {
    float d = out[i] > 0.5f ? out[i] - 0.5f : 0.5f - out[i];
    worst = (d > worst || d != d) ? d : worst; /* a NaN is kept: it fails the check */
  }
  CHECK(rfa_context_destroy(ring));
  free(q);
  free(k);
  free(v);
  free(out);
  free(lse);
  return worst;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  CHECK(rfa_check_version());
  int major = -1, minor = -1, patch = -1;
  CHECK(rfa_get_version(&major, &minor, &patch));
  rfa_options_t defaults;
  CHECK(rfa_options_init(&defaults));
  printf("rfa %d.%d.%d (options version %d)\n", major, minor, patch, (int)defaults.version);
  printf(
      "RFA_HAVE_CUDA=%d\nRFA_HAVE_CUDA_KERNELS=%d\nRFA_HAVE_CUDNN=%d\nRFA_HAVE_NCCL=%d\n"
      "RFA_HAVE_MPI=%d\nRFA_HAVE_HWLOC=%d\nRFA_HAVE_FORTRAN=%d\n",
      RFA_HAVE_CUDA, RFA_HAVE_CUDA_KERNELS, RFA_HAVE_CUDNN, RFA_HAVE_NCCL, RFA_HAVE_MPI, RFA_HAVE_HWLOC,
      RFA_HAVE_FORTRAN);
  int status = 0;
  if (argc > 1 && strcmp(argv[1], "context") == 0) {
    float worst = forward_deviation();
    if (!(worst <= 1e-5f)) {
      fprintf(stderr, "rfa_smoke: forward output differs from 0.5 by %g\n", (double)worst);
      status = 1;
    } else {
      printf("context: created over MPI_COMM_WORLD, forward pass exact to %g\n", (double)worst);
    }
  }
  CHECK(rfa_finalize());
  MPI_Finalize();
  return status;
}
