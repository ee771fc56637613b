/* SPDX-License-Identifier: BSD-3-Clause */
/* rfa_cuda: flash attention kernels for NVIDIA GPUs (sm_80 and newer) behind a raw-pointer
 * interface. No Kokkos, no MPI: a params struct, a cudaStream_t and a status code.
 *
 * Layouts (docs/architecture.md §2), all row-major with the head dimension contiguous:
 *   q, dq              [batch][seq_q][heads][head_dim]
 *   out, dout          [batch][seq_q][heads][value_head_dim]  (value_head_dim: head_dim unless set)
 *   k, dk              [batch][seq_k][kv_heads][head_dim]
 *   v, dv              [batch][seq_k][kv_heads][value_head_dim]
 *   lse, delta         [batch][heads][seq_q], fp32, always contiguous (natural log for lse)
 * Every 4-d tensor takes element strides for its batch, sequence and head dimensions
 * (rfa_cuda_strides); all three zero means the contiguous layout above.
 *
 * No function throws; each returns an rfa_cuda_status and, on failure, leaves a readable
 * message in rfa_cuda_last_error_message() (per calling thread). Kernels are launched on the
 * caller's stream and are asynchronous: a launch error is reported, an execution error
 * surfaces at the caller's next synchronization.
 *
 * The header is valid C99 and C++ so that C callers can use it too. */
#ifndef RFA_CUDA_FLASH_H
#define RFA_CUDA_FLASH_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum rfa_cuda_status {
  RFA_CUDA_SUCCESS = 0,
  RFA_CUDA_ERROR_INVALID_ARGUMENT = 1, /* a null pointer, a bad shape, stride or map */
  RFA_CUDA_ERROR_UNSUPPORTED = 2,      /* valid but not implemented: head_dim, dtype, device */
  RFA_CUDA_ERROR_CUDA = 3              /* the CUDA runtime reported an error (see message) */
} rfa_cuda_status;

typedef enum rfa_cuda_dtype { RFA_CUDA_BF16 = 0, RFA_CUDA_FP16 = 1, RFA_CUDA_FP32 = 2 } rfa_cuda_dtype;

typedef enum rfa_cuda_mask {
  RFA_CUDA_MASK_NONE = 0,
  RFA_CUDA_MASK_CAUSAL = 1 /* key visible iff k_pos <= q_pos, on global positions */
} rfa_cuda_mask;

/* Which implementation runs the forward or the backward. The Hopper path exists only in builds
 * that found CUTLASS (rfa_cuda_sm90_built) and runs only on compute capability 9.x; the
 * deterministic backward always runs on the sm_80 kernels. */
typedef enum rfa_cuda_path {
  RFA_CUDA_PATH_AUTO = 0, /* the sm_80 path: the Hopper backward is the slower (docs/gpus.md) */
  RFA_CUDA_PATH_SM80 = 1, /* mma.sync, cp.async: any device of compute capability 8.0 or newer */
  RFA_CUDA_PATH_SM90 = 2  /* wgmma, TMA, a producer warpgroup and two consumer warpgroups: sm_90 */
} rfa_cuda_path;

/* Where the backward pass puts dQ, dK, dV. */
typedef enum rfa_cuda_grad_mode {
  RFA_CUDA_GRAD_ACCUMULATE_FP32 = 0, /* dq, dk, dv are fp32 and receive +=  (ring hops) */
  RFA_CUDA_GRAD_STORE = 1,           /* dq, dk, dv are in the input dtype and are overwritten */
  /* dq is fp32 and receives +=; dk and dv are fp32 and are overwritten with this block's
   * gradients (every key row, zeros where no query sees it): a ring step's contribution to a
   * block whose travelling partial is still arriving, with nothing to zero first */
  RFA_CUDA_GRAD_ACCUMULATE_DQ_FP32 = 2
} rfa_cuda_grad_mode;

/* Global token positions of a local sequence: 1 or 2 affine segments. Local row i of the
 * first segment sits at start + i*stride; the second segment continues the local rows.
 * count == 0 means the identity map 0..len-1. Mirrors the library's position map. */
typedef struct rfa_cuda_segment {
  int64_t start, stride, length; /* stride >= 1, length >= 1 */
} rfa_cuda_segment;

typedef struct rfa_cuda_position_map {
  rfa_cuda_segment seg[2];
  int count; /* 0, 1 or 2; the lengths of the used segments add up to the sequence length */
} rfa_cuda_position_map;

/* Element strides of a 4-d tensor [batch][seq][head][dim]; all zero: contiguous.
 * Strides must be multiples of 8 elements and base pointers 16-byte aligned (the row-wise calls:
 * strides >= 0 and pointers aligned to their elements; lse, delta and every int64_t array, to
 * theirs). A stride of 0 along a dimension of more than one index broadcasts an input along it
 * (sm80 path only: the
 * sm90 path refuses it, RFA_CUDA_ERROR_UNSUPPORTED, as it does an input's stride of 2^40 bytes
 * or more, which its TMA descriptors cannot hold); an output's is refused on every path
 * (RFA_CUDA_ERROR_INVALID_ARGUMENT: its rows would share elements). */
typedef struct rfa_cuda_strides {
  int64_t batch, seq, head;
} rfa_cuda_strides;

/* The problem shared by forward and backward. */
typedef struct rfa_cuda_attention_shape {
  int64_t batch, seq_q, seq_k, heads, kv_heads, head_dim; /* head_dim: 32, 64, 128, 192 or 256 (sm90: 64 or 128) */
  float scale;                                            /* softmax scale > 0; 0 means 1/sqrt(head_dim) */
  rfa_cuda_mask mask;
  rfa_cuda_position_map q_positions, k_positions;
  rfa_cuda_dtype dtype; /* of q, k, v, dout: RFA_CUDA_BF16 or RFA_CUDA_FP16 */
  /* Sliding window on global positions: a key is visible only if q_pos - k_pos < window, with
   * or without the causal mask. 0 (default): none. */
  int64_t window;
  /* Packed documents: doc_bound_count cumulative boundaries 0 = b[0] <= ... <= b[n] in DEVICE
   * memory (read by the kernels; left unchecked there: the caller validates them); a key is
   * visible only to queries of its document [b[d], b[d+1]). NULL / 0 (default): one document. */
  const int64_t* doc_bounds;
  int64_t doc_bound_count;
  /* Soft-capped scores: with softcap > 0 each scaled score s becomes softcap * tanh(s / softcap)
   * before the mask and the softmax. Runs on the sm_80 kernels: the Hopper path, asked for by
   * name, is RFA_CUDA_ERROR_UNSUPPORTED with a cap (RFA_CUDA_PATH_AUTO takes sm_80 then). The
   * kernels hold softcap / scale and its inverse in fp32: a ratio outside FLT_MIN .. 1 / FLT_MIN
   * is RFA_CUDA_ERROR_UNSUPPORTED. 0 (default): none. */
  float softcap;
  /* A mask given as ranges (the library's RFA_MASK_RANGES), indexed as the library indexes it,
   * in DEVICE memory: with ranges nonzero, query positions [range_band_begin[b],
   * range_band_end[b]) (bands in increasing order, b < range_band_count) see through entries
   * range_band_offset[b] .. range_band_offset[b + 1] - 1 of range_entries, 6 values each
   * (q_begin, q_end, k_begin, k_end, diag_lo, diag_hi): the keys in [k_begin, k_end) whose
   * offset k - q lies in [diag_lo, diag_hi]; queries in no band see nothing. A pair must pass
   * the ranges and the mask, window and documents above. Runs on the sm_80 kernels: the Hopper
   * path, asked for by name, is RFA_CUDA_ERROR_UNSUPPORTED with ranges. 0 (default): none. */
  int ranges;
  const int64_t* range_band_begin;
  const int64_t* range_band_end;
  const int64_t* range_band_offset;
  const int64_t* range_entries;
  int64_t range_band_count;
  /* Per-sequence documents: batch + 1 offsets into doc_bounds in DEVICE memory (unchecked there,
   * as doc_bounds); batch entry b's boundaries are doc_bounds[doc_offsets[b] .. doc_offsets[b + 1])
   * (no values: one document). Only beside doc_bounds (doc_bound_count >= 2: where no entry has
   * a boundary, pass no offsets), 8-byte aligned like it; RFA_CUDA_ERROR_INVALID_ARGUMENT
   * otherwise. Runs on the sm_80 kernels: the Hopper path, asked for by name, is
   * RFA_CUDA_ERROR_UNSUPPORTED with them. NULL (default): doc_bounds serves every entry. */
  const int64_t* doc_offsets;
  /* The head dim of v, out, dout and dv where it differs from head_dim (multi-head latent
   * attention: head_dim 192 with value_head_dim 128, the pair the sm_80 kernels take beside one
   * head dim); the Hopper path, asked for by name, is RFA_CUDA_ERROR_UNSUPPORTED with it. Those
   * tensors are then [..][value_head_dim]; the default scale stays 1/sqrt(head_dim). 0 (default):
   * head_dim. */
  int64_t value_head_dim;
} rfa_cuda_attention_shape;

typedef struct rfa_cuda_forward_params {
  rfa_cuda_attention_shape shape;
  const void* q;
  rfa_cuda_strides q_strides;
  const void* k;
  rfa_cuda_strides k_strides;
  const void* v;
  rfa_cuda_strides v_strides;
  void* out;
  rfa_cuda_strides out_strides;
  rfa_cuda_dtype out_dtype; /* shape.dtype (normalized output) or RFA_CUDA_FP32 (ring partial) */
  float* lse;               /* [batch][heads][seq_q]; -inf for a row that sees no key */
  /* Nonzero (out_dtype fp32 only): out and lse already hold the normalized result over earlier
   * key blocks (lse -inf: none yet, out then ignored), and this block is merged into them as
   * rfa_cuda_merge_partial would, in the kernel's epilogue. Rows that see no key of this block
   * keep their values. */
  int merge;
  /* The implementation (default RFA_CUDA_PATH_AUTO); rfa_cuda_resolve_path says which one runs.
   * Asking for the Hopper path where it cannot run is RFA_CUDA_ERROR_UNSUPPORTED. */
  rfa_cuda_path path;
} rfa_cuda_forward_params;

typedef struct rfa_cuda_backward_params {
  rfa_cuda_attention_shape shape;
  const void* q;
  rfa_cuda_strides q_strides;
  const void* k;
  rfa_cuda_strides k_strides;
  const void* v;
  rfa_cuda_strides v_strides;
  const void* dout;
  rfa_cuda_strides dout_strides;
  const float* lse;   /* final lse of the full attention, [batch][heads][seq_q] */
  const float* delta; /* D = rowsum(dout * out), from rfa_cuda_attention_delta */
  rfa_cuda_grad_mode grad_mode;
  void* dq;
  rfa_cuda_strides dq_strides;
  void* dk;
  rfa_cuda_strides dk_strides;
  void* dv;
  rfa_cuda_strides dv_strides;
  /* RFA_CUDA_GRAD_STORE without `deterministic` only: device scratch of
   * rfa_cuda_backward_workspace_size() bytes, 16-byte aligned; it holds the fp32 dQ
   * accumulator. Unused (may be NULL) otherwise. */
  void* workspace;
  /* Nonzero: dq, dk and dv are bitwise identical from run to run. dQ is then computed by a
   * second kernel in which each query row has one writer (no atomics), at the cost of
   * recomputing QK^T and dO V^T once more; no workspace is needed. 0 (default): dQ is summed
   * over key tiles with fp32 atomics, whose order varies. */
  int deterministic;
  /* The implementation, as for the forward (default RFA_CUDA_PATH_AUTO). With the Hopper path dQ
   * is summed by bulk adds from shared memory instead of per-element atomics (still in varying
   * order); `deterministic` runs the sm_80 kernels whatever the path (the Hopper path is then
   * neither resolved nor asked whether it takes the shape). */
  rfa_cuda_path path;
} rfa_cuda_backward_params;

/* D = rowsum(dout * out) in fp32, one value per (batch, head, query). */
typedef struct rfa_cuda_delta_params {
  int64_t batch, seq, heads, head_dim; /* any head_dim >= 1 */
  const void* out;
  rfa_cuda_strides out_strides;
  rfa_cuda_dtype out_dtype; /* any dtype */
  const void* dout;
  rfa_cuda_strides dout_strides;
  rfa_cuda_dtype dout_dtype; /* any dtype */
  float* delta;              /* [batch][heads][seq] */
} rfa_cuda_delta_params;

/* Ring merge of one block's normalized partial result into the running one, all fp32:
 *   out <- out - sigmoid(block_lse - lse) * (out - block_out)
 *   lse <- log(e^lse + e^block_lse) = max + log1p(exp(-|lse - block_lse|))
 * Rows with block_lse = -inf are left untouched; rows with lse = -inf take the block's
 * values (so out may start as anything and lse as -inf). */
typedef struct rfa_cuda_merge_params {
  int64_t batch, seq, heads, head_dim; /* any head_dim >= 1 */
  float* out;
  rfa_cuda_strides out_strides;
  float* lse; /* [batch][heads][seq] */
  const float* block_out;
  rfa_cuda_strides block_out_strides;
  const float* block_lse; /* [batch][heads][seq] */
} rfa_cuda_merge_params;

/* Narrowing of an fp32 result into the storage dtype, rounding to nearest even:
 *   dst[b][s][h][:] <- src[b][s][h][:]   (the ring's fp32 accumulators -> the caller's out/dq) */
typedef struct rfa_cuda_convert_params {
  int64_t batch, seq, heads, head_dim; /* any head_dim >= 1 */
  const float* src;
  rfa_cuda_strides src_strides;
  void* dst;
  rfa_cuda_strides dst_strides;
  rfa_cuda_dtype dst_dtype; /* RFA_CUDA_BF16 or RFA_CUDA_FP16 */
} rfa_cuda_convert_params;

/* Fills p with defaults: zeros, identity position maps, mask none, dtype bf16,
 * out_dtype bf16 (forward), grad mode accumulate (backward). */
void rfa_cuda_forward_params_init(rfa_cuda_forward_params* p);
void rfa_cuda_backward_params_init(rfa_cuda_backward_params* p);

rfa_cuda_status rfa_cuda_flash_forward(const rfa_cuda_forward_params* p, cudaStream_t stream);

/* Whether the current device runs the sm_80 kernels at these head dims (value_head_dim 0:
 * head_dim): a pair they are built for, the forward's layout the environment asks for
 * (RFA_CUDA_SM80_FORWARD_ROWS_PER_WARP: unset or 16, or 32 at value head dims up to 128), the
 * backward's key tile it asks for (RFA_CUDA_SM80_BACKWARD_KEY_TILE: unset, 64, or 128 where
 * head_dim + value head dim <= 256), a device of compute capability 8.0 or newer, and the shared
 * memory each of their kernels asks per block (up to 144 KB at 192 and 256) within what the
 * device lets a block have (compute capability 8.6 and 8.9: 99 KB, so head dims up to 128 at the
 * default layouts). RFA_CUDA_ERROR_UNSUPPORTED saying which need is not met;
 * RFA_CUDA_ERROR_INVALID_ARGUMENT for a value of either variable other than those two of each.
 * The forward and backward check the same before they launch. */
rfa_cuda_status rfa_cuda_check_head_dims(int64_t head_dim, int64_t value_head_dim);

/* Nonzero when this build has the Hopper kernels (compiled for sm_90a against CUTLASS). */
int rfa_cuda_sm90_built(void);
/* Nonzero when the Hopper kernels (path RFA_CUDA_PATH_SM90) take a call of this shape: one head
 * dim, 64 or 128 (value_head_dim 0 or equal to it), no soft cap, no mask given as ranges and one
 * list of documents (no doc_offsets); the forward and backward on that path refuse every other
 * shape (RFA_CUDA_ERROR_UNSUPPORTED), which the sm_80 kernels take. Looks at the shape alone (not
 * at the build or the device: rfa_cuda_resolve_path) and sets no error message. */
int rfa_cuda_sm90_takes(const rfa_cuda_attention_shape* shape);
/* The path rfa_cuda_flash_forward and rfa_cuda_flash_backward take for `requested` on the current
 * device: RFA_CUDA_PATH_SM80 or RFA_CUDA_PATH_SM90 in *chosen, or RFA_CUDA_ERROR_UNSUPPORTED
 * (with the reason) when the request cannot be met here. */
rfa_cuda_status rfa_cuda_resolve_path(rfa_cuda_path requested, rfa_cuda_path* chosen);
/* "auto", "sm80", "sm90" ("unknown" otherwise). */
const char* rfa_cuda_path_name(rfa_cuda_path path);

/* Bytes of workspace the backward needs (0 in accumulate mode and in the deterministic mode). */
size_t rfa_cuda_backward_workspace_size(const rfa_cuda_backward_params* p);
rfa_cuda_status rfa_cuda_flash_backward(const rfa_cuda_backward_params* p, cudaStream_t stream);

rfa_cuda_status rfa_cuda_attention_delta(const rfa_cuda_delta_params* p, cudaStream_t stream);
rfa_cuda_status rfa_cuda_merge_partial(const rfa_cuda_merge_params* p, cudaStream_t stream);

rfa_cuda_status rfa_cuda_convert_from_fp32(const rfa_cuda_convert_params* p, cudaStream_t stream);

/* Elementwise fp32 helpers over `count` contiguous values (count 0 launches nothing):
 * into[i] += from[i] (the ring's dK/dV partials), and data[i] = value (-inf for a fresh lse). */
rfa_cuda_status rfa_cuda_add_fp32(float* into, const float* from, size_t count, cudaStream_t stream);
rfa_cuda_status rfa_cuda_fill_fp32(float* data, float value, size_t count, cudaStream_t stream);

const char* rfa_cuda_status_string(rfa_cuda_status status);
/* The detailed message of this thread's last failure ("" if none yet). */
const char* rfa_cuda_last_error_message(void);

#ifdef __cplusplus
}
#endif

#endif /* RFA_CUDA_FLASH_H */
