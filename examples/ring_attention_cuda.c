/* SPDX-License-Identifier: BSD-3-Clause */
/* Ring attention on GPUs from C: run with  mpiexec -n 2 ./rfa_example_cuda_c
 *
 * The same ring as examples/ring_attention.c, with every tensor in GPU memory: the context is
 * created with options.device = RFA_DEVICE_CUDA, rfa enqueues its kernels and copies on the
 * stream the application hands it, and rfa_forward / rfa_backward return without waiting for
 * the GPU. Ranks may share one GPU (RFA_TRANSPORT=mpi) or have one each (NCCL, the default
 * when rfa was built with it). Needs rfa built against a CUDA-enabled Kokkos; exits with 77
 * (skipped) when this rank sees no GPU. */
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

#define CUDA_CHECK(call)                                                 \
  do {                                                                   \
    cudaError_t e_ = (call);                                             \
    if (e_ != cudaSuccess) {                                             \
      fprintf(stderr, "%s failed: %s\n", #call, cudaGetErrorString(e_)); \
      MPI_Abort(MPI_COMM_WORLD, 1);                                      \
    }                                                                    \
  } while (0)

/* bf16 is the top half of an fp32 (rounded to nearest even). */
static uint16_t to_bf16(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}
static float from_bf16(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float x;
  memcpy(&x, &u, sizeof x);
  return x;
}

/* A host tensor of bf16 values for this rank's tokens, copied to a new device buffer. */
static void* device_tensor(const int64_t* pos, int64_t L, int64_t heads, int64_t d, float phase) {
  const size_t n = (size_t)(L * heads * d);
  uint16_t* host = malloc(n * sizeof *host);
  void* dev = NULL;
  for (int64_t i = 0; i < L; ++i)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t c = 0; c < d; ++c)
        host[(i * heads + h) * d + c] =
            to_bf16((float)sin(0.05 * (double)pos[i] + 0.3 * (double)h + 0.7 * (double)c + phase));
  CUDA_CHECK(cudaMalloc(&dev, n * sizeof *host));
  CUDA_CHECK(cudaMemcpy(dev, host, n * sizeof *host, cudaMemcpyHostToDevice));
  free(host);
  return dev;
}

int main(int argc, char** argv) {
  int rank, devices = 0, any_missing = 0;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  /* rfa works on the caller's current device: pick one (here: by rank, wrapping around). */
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) any_missing = 1;
  MPI_Allreduce(MPI_IN_PLACE, &any_missing, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (any_missing) {
    if (rank == 0) printf("no CUDA device on some rank: nothing to run\n");
    MPI_Finalize();
    return 77;
  }
  CUDA_CHECK(cudaSetDevice(rank % devices));
  RFA_CHECK(rfa_check_version());

  rfa_options_t o;
  RFA_CHECK(rfa_options_init(&o));
  o.device = RFA_DEVICE_CUDA; /* tensors in GPU memory, kernels on the GPU */
  o.layout = RFA_LAYOUT_ZIGZAG;
  o.mask = RFA_MASK_CAUSAL;
  o.dtype = RFA_DTYPE_BFLOAT16; /* the CUDA kernels store bf16 or fp16 */
  o.batch = 1;
  o.seq_total = 8192;
  o.heads = 8;
  o.kv_heads = 2;
  o.head_dim = 128; /* the CUDA kernels take 32, 64, 128, 192 or 256 */
  rfa_context_t ring;
  RFA_CHECK(rfa_context_create(MPI_COMM_WORLD, &o, &ring)); /* collective */
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  RFA_CHECK(rfa_context_set_stream(ring, stream)); /* rfa's work goes on this stream */

  int64_t L;
  RFA_CHECK(rfa_context_get_local_seq(ring, &L));
  int64_t* pos = malloc((size_t)L * sizeof *pos);
  RFA_CHECK(rfa_context_get_local_positions(ring, pos, L));
  const int64_t H = o.heads, Hkv = o.kv_heads, d = o.head_dim;
  void* q = device_tensor(pos, L, H, d, 0.0f);
  void* k = device_tensor(pos, L, Hkv, d, 1.0f);
  void* v = device_tensor(pos, L, Hkv, d, 2.0f);
  void* dout = device_tensor(pos, L, H, d, 3.0f);
  void *out, *dq, *dk, *dv;
  float* lse;
  CUDA_CHECK(cudaMalloc(&out, (size_t)(L * H * d) * 2));
  CUDA_CHECK(cudaMalloc(&dq, (size_t)(L * H * d) * 2));
  CUDA_CHECK(cudaMalloc(&dk, (size_t)(L * Hkv * d) * 2));
  CUDA_CHECK(cudaMalloc(&dv, (size_t)(L * Hkv * d) * 2));
  CUDA_CHECK(cudaMalloc((void**)&lse, (size_t)(H * L) * sizeof(float)));

  RFA_CHECK(rfa_forward(ring, q, k, v, out, lse)); /* collective; returns once queued */
  RFA_CHECK(rfa_backward(ring, q, k, v, out, dout, lse, dq, dk, dv));
  CUDA_CHECK(cudaStreamSynchronize(stream)); /* or rfa_context_synchronize(ring) */

  /* The first query token of this rank, head 0: its output, read back to the host. */
  uint16_t first[128];
  CUDA_CHECK(cudaMemcpy(first, out, sizeof first, cudaMemcpyDeviceToHost));
  double norm = 0.0;
  for (int c = 0; c < 128; ++c) norm += (double)from_bf16(first[c]) * from_bf16(first[c]);
  printf("rank %d: %lld tokens from position %lld; |out| of its first token, head 0: %.4f\n", rank, (long long)L,
         (long long)pos[0], sqrt(norm));

  RFA_CHECK(rfa_context_destroy(ring)); /* collective */
  void* buffers[] = {q, k, v, dout, out, dq, dk, dv, lse};
  for (size_t i = 0; i < sizeof buffers / sizeof buffers[0]; ++i) CUDA_CHECK(cudaFree(buffers[i]));
  cudaStreamDestroy(stream);
  free(pos);
  RFA_CHECK(rfa_finalize());
  MPI_Finalize();
  return 0;
}
