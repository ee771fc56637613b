/* SPDX-License-Identifier: BSD-3-Clause */
/* Local attention over a 2-D field split across ranks: run with  mpiexec -n 2 ./rfa_example_grid
 *
 * A field of NX x NY points, one token per point in row-major order (x fastest), is cut into
 * horizontal slabs, one per rank (the contiguous layout: a domain decomposition along y). Each
 * point attends to the points within RADIUS along x and y, a mask rfa builds as ranges
 * (rfa_mask_ranges_grid_neighbourhood). A rank's queries then see its own slab and the RADIUS
 * rows at the edges of its neighbours, and rfa runs the ring steps those need.
 *
 * Every input is a function of the point, so each rank checks its own rows against attention
 * computed directly over each point's neighbourhood. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "rfa/rfa.h"
#include "rfa/rfa_mpi.h"

#define RFA_CHECK(call)                                                                                       \
  do {                                                                                                        \
    rfa_result_t rc_ = (call);                                                                                \
    if (rc_ != RFA_SUCCESS) {                                                                                 \
      fprintf(stderr, "%s failed: %s: %s\n", #call, rfa_get_error_string(rc_), rfa_get_last_error_message()); \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                                           \
    }                                                                                                         \
  } while (0)

enum { NX = 24, NY = 16, RADIUS = 2, HEADS = 2, DIM = 16 };

/* The field's value at a point, per head and channel (phase: 0 for q, 1 for k, 2 for v). */
static float field(int64_t position, int64_t head, int64_t channel, float phase) {
  const double x = (double)(position % NX), y = (double)(position / NX);
  return (float)sin(0.3 * x + 0.2 * y + 0.5 * (double)head + 0.9 * (double)channel + phase);
}

int main(int argc, char** argv) {
  int rank, ranks;
  int64_t count = 0, L, i, h, c;
  rfa_options_t options;
  rfa_mask_range_t* ranges;
  rfa_context_t ctx = NULL;
  double worst = 0.0, worst_all = 0.0;

  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  RFA_CHECK(rfa_check_version());
  if (NY % ranks != 0) {
    if (rank == 0) fprintf(stderr, "run on a number of ranks that divides %d\n", NY);
    MPI_Finalize();
    return 1;
  }

  /* The neighbourhood as ranges: ask for the count, then fill. */
  RFA_CHECK(rfa_mask_ranges_grid_neighbourhood(NX, NY, 1, RADIUS, NULL, 0, &count));
  ranges = malloc((size_t)count * sizeof *ranges);
  RFA_CHECK(rfa_mask_ranges_grid_neighbourhood(NX, NY, 1, RADIUS, ranges, count, &count));

  RFA_CHECK(rfa_options_init(&options));
  options.layout = RFA_LAYOUT_CONTIGUOUS; /* rank r holds rows y in [r NY/P, (r+1) NY/P) */
  options.ring_order = RFA_RING_ORDER_IDENTITY;
  options.mask = RFA_MASK_RANGES;
  options.mask_ranges = ranges;
  options.mask_range_count = count;
  options.dtype = RFA_DTYPE_FLOAT32;
  options.seq_total = NX * NY;
  options.heads = HEADS;
  options.kv_heads = HEADS;
  options.head_dim = DIM;
  RFA_CHECK(rfa_context_create(MPI_COMM_WORLD, &options, &ctx));
  free(ranges); /* the context keeps its own copy */
  RFA_CHECK(rfa_context_get_local_seq(ctx, &L));

  {
    float* q = malloc((size_t)(L * HEADS * DIM) * sizeof(float));
    float* k = malloc((size_t)(L * HEADS * DIM) * sizeof(float));
    float* v = malloc((size_t)(L * HEADS * DIM) * sizeof(float));
    float* out = malloc((size_t)(L * HEADS * DIM) * sizeof(float));
    float* lse = malloc((size_t)(HEADS * L) * sizeof(float));
    int64_t* positions = malloc((size_t)L * sizeof(int64_t));
    RFA_CHECK(rfa_context_get_local_positions(ctx, positions, L));
    for (i = 0; i < L; ++i)
      for (h = 0; h < HEADS; ++h)
        for (c = 0; c < DIM; ++c) {
          q[(i * HEADS + h) * DIM + c] = field(positions[i], h, c, 0.0f);
          k[(i * HEADS + h) * DIM + c] = field(positions[i], h, c, 1.0f);
          v[(i * HEADS + h) * DIM + c] = field(positions[i], h, c, 2.0f);
        }
    RFA_CHECK(rfa_forward(ctx, q, k, v, out, lse));

    /* Each local point's attention over its neighbourhood, directly. */
    for (i = 0; i < L; ++i)
      for (h = 0; h < HEADS; ++h) {
        const int64_t x = positions[i] % NX, y = positions[i] / NX;
        double scores[(2 * RADIUS + 1) * (2 * RADIUS + 1)], top = -INFINITY, sum = 0.0, want[DIM] = {0};
        int64_t keys[(2 * RADIUS + 1) * (2 * RADIUS + 1)], n = 0, j, dx, dy;
        for (dy = -RADIUS; dy <= RADIUS; ++dy)
          for (dx = -RADIUS; dx <= RADIUS; ++dx) {
            if (x + dx < 0 || x + dx >= NX || y + dy < 0 || y + dy >= NY) continue;
            keys[n] = (y + dy) * NX + x + dx;
            scores[n] = 0.0;
            for (c = 0; c < DIM; ++c) scores[n] += (double)field(positions[i], h, c, 0.0f) * field(keys[n], h, c, 1.0f);
            scores[n] /= sqrt((double)DIM);
            if (scores[n] > top) top = scores[n];
            ++n;
          }
        for (j = 0; j < n; ++j) sum += exp(scores[j] - top);
        for (j = 0; j < n; ++j)
          for (c = 0; c < DIM; ++c) want[c] += exp(scores[j] - top) / sum * field(keys[j], h, c, 2.0f);
        for (c = 0; c < DIM; ++c) {
          const double e = fabs(out[(i * HEADS + h) * DIM + c] - want[c]);
          if (e > worst) worst = e;
        }
      }
    MPI_Allreduce(&worst, &worst_all, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0)
      printf("%d x %d field on %d ranks, radius %d (%lld ranges): max |out - direct| = %.2e\n", NX, NY, ranks, RADIUS,
             (long long)count, worst_all);
    free(q);
    free(k);
    free(v);
    free(out);
    free(lse);
    free(positions);
  }
  RFA_CHECK(rfa_context_destroy(ctx));
  RFA_CHECK(rfa_finalize());
  MPI_Finalize();
  return worst_all < 1e-5 ? 0 : 1;
}
