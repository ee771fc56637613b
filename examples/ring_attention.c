/* SPDX-License-Identifier: BSD-3-Clause */
/* Ring attention from C: run with  mpiexec -n 2 ./rfa_example_c
 *
 * Each rank owns a slice of one long sequence. It asks rfa which global token positions it
 * must hold (the ring position and the layout decide), fills its slice of Q, K and V for
 * exactly those tokens, and calls rfa_forward and rfa_backward: every rank gets the exact
 * attention output for its own queries over the *whole* sequence, and the gradients for its
 * own Q, K and V, without any rank ever holding the whole sequence. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "rfa/rfa.h"
#include "rfa/rfa_mpi.h" /* rfa_context_create takes an MPI_Comm */

/* Stops every rank if an rfa call fails, printing the library's detailed message. */
#define RFA_CHECK(call)                                                                                       \
  do {                                                                                                        \
    rfa_result_t rc_ = (call);                                                                                \
    if (rc_ != RFA_SUCCESS) {                                                                                 \
      fprintf(stderr, "%s failed: %s: %s\n", #call, rfa_get_error_string(rc_), rfa_get_last_error_message()); \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                                           \
    }                                                                                                         \
  } while (0)

/* A made-up input: a smooth function of (global token position, head, channel), so that any
 * rank can produce the values of the tokens it holds without seeing the others. */
static float token_value(int64_t position, int64_t head, int64_t channel, float phase) {
  return (float)sin(0.05 * (double)position + 0.3 * (double)head + 0.7 * (double)channel + phase);
}

int main(int argc, char** argv) {
  int rank, ring_position, ranks;
  int64_t L, b, i, h, c;
  rfa_options_t options;
  rfa_context_t ring = NULL;

  /* rfa never initializes MPI: the application does. */
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);

  /* The library must have the major version this program was compiled against. */
  RFA_CHECK(rfa_check_version());

  /* Describe the problem. rfa_options_init fills the defaults and the struct's size, so this
   * program keeps working with later library versions that append fields. */
  RFA_CHECK(rfa_options_init(&options));
  options.layout = RFA_LAYOUT_ZIGZAG; /* balances causal work over the ranks */
  options.mask = RFA_MASK_CAUSAL;
  options.dtype = RFA_DTYPE_FLOAT32;
  options.batch = 1;
  options.seq_total = 1024; /* the whole sequence: a multiple of 2 * ranks for zigzag */
  options.heads = 8;
  options.kv_heads = 2; /* grouped-query attention: 4 query heads share each K/V head */
  options.head_dim = 64;

  /* Collective: every rank passes the same options (checked: a mismatch fails on all ranks
   * with a message naming the field and the ranks). rfa orders the ring by the hardware
   * topology unless RFA_RING_ORDER says otherwise, so the ring position may differ from
   * the MPI rank: always shard by the ring position. */
  RFA_CHECK(rfa_context_create(MPI_COMM_WORLD, &options, &ring));
  RFA_CHECK(rfa_context_get_position(ring, &ring_position));
  RFA_CHECK(rfa_context_get_ranks(ring, &ranks));
  RFA_CHECK(rfa_context_get_local_seq(ring, &L));

  {
    const int64_t H = options.heads, Hkv = options.kv_heads, D = options.head_dim, B = options.batch;
    /* Row-major bshd: q[b][i][h][d] for this rank's L tokens. */
    float* q = malloc((size_t)(B * L * H * D) * sizeof(float));
    float* k = malloc((size_t)(B * L * Hkv * D) * sizeof(float));
    float* v = malloc((size_t)(B * L * Hkv * D) * sizeof(float));
    float* out = malloc((size_t)(B * L * H * D) * sizeof(float));
    float* lse = malloc((size_t)(B * H * L) * sizeof(float)); /* [b][h][i], fp32 */
    float* dout = malloc((size_t)(B * L * H * D) * sizeof(float));
    float* dq = malloc((size_t)(B * L * H * D) * sizeof(float));
    float* dk = malloc((size_t)(B * L * Hkv * D) * sizeof(float));
    float* dv = malloc((size_t)(B * L * Hkv * D) * sizeof(float));
    int64_t* positions = malloc((size_t)L * sizeof(int64_t));
    double local_sum = 0.0, total_sum = 0.0;

    /* Local row i holds global token positions[i] (with zigzag: two separate chunks). */
    RFA_CHECK(rfa_context_get_local_positions(ring, positions, L));
    for (b = 0; b < B; ++b)
      for (i = 0; i < L; ++i) {
        for (h = 0; h < H; ++h)
          for (c = 0; c < D; ++c) {
            q[((b * L + i) * H + h) * D + c] = token_value(positions[i], h, c, 0.0f);
            dout[((b * L + i) * H + h) * D + c] = 1.0f / (float)(H * D); /* d(mean of out) */
          }
        for (h = 0; h < Hkv; ++h)
          for (c = 0; c < D; ++c) {
            k[((b * L + i) * Hkv + h) * D + c] = token_value(positions[i], h, c, 1.0f);
            v[((b * L + i) * Hkv + h) * D + c] = token_value(positions[i], h, c, 2.0f);
          }
      }

    /* Collective: K/V blocks travel around the ring while each rank computes. */
    RFA_CHECK(rfa_forward(ring, q, k, v, out, lse));
    /* Collective: the gradients of the loss with respect to this rank's q, k and v. */
    RFA_CHECK(rfa_backward(ring, q, k, v, out, dout, lse, dq, dk, dv));

    /* Something to print: the mean of the output over the whole sequence. */
    for (i = 0; i < B * L * H * D; ++i) local_sum += out[i];
    MPI_Allreduce(&local_sum, &total_sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    printf("rank %d: ring position %d of %d, first and last token %lld, %lld, dq[0] = %.6f\n", rank, ring_position,
           ranks, (long long)positions[0], (long long)positions[L - 1], dq[0]);
    if (rank == 0)
      printf("mean of out over %lld tokens: %.6f\n", (long long)options.seq_total,
             total_sum / (double)(B * options.seq_total * H * D));

    free(q);
    free(k);
    free(v);
    free(out);
    free(lse);
    free(dout);
    free(dq);
    free(dk);
    free(dv);
    free(positions);
  }

  /* Collective (frees the ring's communicator): before MPI_Finalize. */
  RFA_CHECK(rfa_context_destroy(ring));
  /* Finalizes Kokkos if rfa initialized it; it cannot be initialized again afterwards. */
  RFA_CHECK(rfa_finalize());
  MPI_Finalize();
  return 0;
}
