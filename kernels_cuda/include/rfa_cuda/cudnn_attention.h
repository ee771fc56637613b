/* SPDX-License-Identifier: BSD-3-Clause */
/* rfa_cuda's second block kernel: cuDNN's fused attention (SDPA forward with softmax
 * statistics, SDPA backward) behind the same parameter structs as flash.h, for the ring.
 *
 * A block is asked of cuDNN as one or more band calls (src/cudnn/band_plan.hpp): cuDNN's mask
 * is a band around the diagonal of contiguous rows, rfa's is a rule on global positions, and
 * the contiguous, zigzag and stripe layouts turn into such bands exactly. Where they do not
 * (a document boundary inside the block, a 32-bit dtype), rfa_cudnn_plan_forward() and _backward() say so and the
 * caller runs the block on rfa_cuda_flash_* instead: never a different mask.
 *
 * cuDNN is loaded at run time (dlopen of libcudnn.so.9, or the file rfa_cudnn_load() names):
 * one build runs with or without cuDNN installed. Graphs and execution plans are built once
 * per band shape and kept in the context; a call after the first of a shape builds nothing.
 *
 * Numerics: cuDNN writes each band's output (forward) and gradients (backward) in the storage
 * dtype; rfa folds them into its fp32 ring state (merge, accumulation) in fp32. The statistics
 * are fp32 natural-log log-sum-exps, as rfa's. A block that is one band over the whole of it
 * (the one block of a pass: one rank, Ulysses) may instead have its results written in place,
 * in the storage dtype, with nothing to merge or accumulate (rfa_cudnn_writes_in_place).
 *
 * Functions return rfa_cuda_status and leave a message in rfa_cuda_last_error_message() on
 * failure, like flash.h. A context belongs to the CUDA device that was current when it was
 * made and must be used by one thread at a time. */
#ifndef RFA_CUDA_CUDNN_ATTENTION_H
#define RFA_CUDA_CUDNN_ATTENTION_H

#include <stddef.h>
#include <stdint.h>

#include "rfa_cuda/flash.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The oldest cuDNN rfa asks for fused attention: 9.10.2 (a window without the causal bound needs it;
 * the cuDNN frontend refuses 9.10.0 and 9.10.1 for bf16/fp16 attention). */
#define RFA_CUDNN_MIN_VERSION 91002

/* Loads cuDNN once per process (later calls return the first result, whatever file they name):
 * `library_file` (a path or a name the loader searches), or libcudnn.so.9 when it is NULL or "".
 * RFA_CUDA_SUCCESS when a cuDNN of at least RFA_CUDNN_MIN_VERSION loaded; otherwise
 * RFA_CUDA_ERROR_UNSUPPORTED with the reason (not found, too old) in the message. Needs no GPU. */
rfa_cuda_status rfa_cudnn_load(const char* library_file);

/* The loaded cuDNN's version (cudnnGetVersion, e.g. 91900 for 9.19.0), 0 when none loaded. */
int64_t rfa_cudnn_version(void);

typedef struct rfa_cudnn_context rfa_cudnn_context;

/* A cuDNN handle on the current device and an empty plan cache. Loads cuDNN if needed. */
rfa_cuda_status rfa_cudnn_create(rfa_cudnn_context** context);
void rfa_cudnn_destroy(rfa_cudnn_context* context);

/* Whether rfa_cudnn_forward and rfa_cudnn_backward may write the results of `shape`'s block in
 * place (forward: merge 0, out_dtype shape->dtype; backward: grad mode store): 1 when cuDNN
 * computes the block as one band over all of its query rows and key rows, 0 otherwise (several
 * bands, whose results must be merged or accumulated in fp32, or a block cuDNN does not
 * compute: rfa_cudnn_plan_forward says why). `host_doc_bounds` as in
 * rfa_cudnn_plan_forward. Host code: needs neither a GPU nor cuDNN, builds no plan, and leaves
 * rfa_cuda_last_error_message() as it was. */
int rfa_cudnn_writes_in_place(const rfa_cuda_attention_shape* shape, const int64_t* host_doc_bounds);

/* Whether cuDNN computes `shape`'s block at all: 1 when its bands express the block's mask and
 * shape (one band or several), 0 where rfa_cudnn_plan_forward and rfa_cudnn_plan_backward refuse
 * it by its shape (RFA_CUDA_ERROR_UNSUPPORTED, saying why: a soft cap, ranges, per-sequence
 * documents, a value head dim of its own, a mask its bands cannot cut out), so that rfa's
 * kernels compute it. A plan may still be declined when it is built. Host code, like
 * rfa_cudnn_writes_in_place. */
int rfa_cudnn_expresses(const rfa_cuda_attention_shape* shape, const int64_t* host_doc_bounds);

/* Whether cuDNN computes the forward of p's block exactly, and the device scratch that needs:
 * RFA_CUDA_SUCCESS and *workspace_bytes, or RFA_CUDA_ERROR_UNSUPPORTED with the reason (the caller
 * then uses rfa_cuda_flash_forward). `host_doc_bounds` is the host copy of p->shape.doc_bounds
 * (NULL without documents). Builds and caches the execution plans of the block's bands; only the
 * shapes and strides of p are read, not its pointers. */
rfa_cuda_status rfa_cudnn_plan_forward(rfa_cudnn_context* context, const rfa_cuda_forward_params* p,
                                       const int64_t* host_doc_bounds, size_t* workspace_bytes);

/* The same for the backward of p's block, whose final output has strides `out_strides`;
 * p->deterministic selects cuDNN's deterministic backward. */
rfa_cuda_status rfa_cudnn_plan_backward(rfa_cudnn_context* context, const rfa_cuda_backward_params* p,
                                        rfa_cuda_strides out_strides, const int64_t* host_doc_bounds,
                                        size_t* workspace_bytes);

/* The forward of one ring block. Merged (p->merge 1, out_dtype RFA_CUDA_FP32): p->out (fp32)
 * and p->lse hold the normalized result over earlier blocks (lse -inf: none yet) and receive
 * this block's share, as rfa_cuda_flash_forward with merge = 1 (a first block merges into lse =
 * -inf); rows that see no key of the block keep their values. In place (p->merge 0, out_dtype
 * shape.dtype, only where rfa_cudnn_writes_in_place: RFA_CUDA_ERROR_UNSUPPORTED otherwise, from
 * rfa_cudnn_plan_forward too): p->out in the storage dtype and p->lse are overwritten with the
 * block's normalized result. Any other pair of merge and out_dtype is
 * RFA_CUDA_ERROR_INVALID_ARGUMENT. `workspace` holds rfa_cudnn_plan_forward()'s bytes (256-byte
 * aligned; the plan of the same merge and out_dtype), on the stream's device. */
rfa_cuda_status rfa_cudnn_forward(rfa_cudnn_context* context, const rfa_cuda_forward_params* p,
                                  const int64_t* host_doc_bounds, void* workspace, size_t workspace_bytes,
                                  cudaStream_t stream);

/* The backward of one ring block: p->dq, p->dk, p->dv are fp32 and receive += this block's
 * gradients (grad_mode RFA_CUDA_GRAD_ACCUMULATE_FP32), or, in place (grad_mode
 * RFA_CUDA_GRAD_STORE, only where rfa_cudnn_writes_in_place: RFA_CUDA_ERROR_UNSUPPORTED
 * otherwise, from rfa_cudnn_plan_backward too), are in the storage dtype and overwritten with the
 * block's gradients; p->lse is the final lse. cuDNN takes the
 * final output `out` (strides `out_strides`, in shape.dtype) instead of p->delta, which is
 * ignored. p->deterministic selects cuDNN's deterministic backward. */
rfa_cuda_status rfa_cudnn_backward(rfa_cudnn_context* context, const rfa_cuda_backward_params* p, const void* out,
                                   rfa_cuda_strides out_strides, const int64_t* host_doc_bounds, void* workspace,
                                   size_t workspace_bytes, cudaStream_t stream);

/* Whether rfa_cudnn_backward_holding_key_gradients takes `shape`'s block: 1 when cuDNN computes it
 * as one band (a second band's graph would write over the first's dK and dV in the workspace),
 * 0 otherwise. A plan may still be declined when it is built. Host code, like
 * rfa_cudnn_writes_in_place. */
int rfa_cudnn_holds_key_gradients(const rfa_cuda_attention_shape* shape, const int64_t* host_doc_bounds);

/* rfa_cudnn_backward with grad_mode RFA_CUDA_GRAD_ACCUMULATE_FP32, except that the block's dK and
 * dV are not added to p->dk and p->dv (not read; they may be NULL): they stay in `workspace`, in
 * the storage dtype, for rfa_cudnn_add_held_key_gradients to add. dQ is added to p->dq as by
 * rfa_cudnn_backward. Grad mode store is RFA_CUDA_ERROR_INVALID_ARGUMENT. For the ring, whose dK/dV partial of a step's
 * block is still arriving when the step's backward starts: the gradients wait in cuDNN's own output, and one addition
 * puts them into the partial once it is in, where an fp32 buffer of their own would be zeroed,
 * added to, and added again. Only for a block rfa_cudnn_holds_key_gradients takes
 * (RFA_CUDA_ERROR_UNSUPPORTED otherwise); the workspace is rfa_cudnn_plan_backward()'s for
 * grad mode accumulate. */
rfa_cuda_status rfa_cudnn_backward_holding_key_gradients(rfa_cudnn_context* context, const rfa_cuda_backward_params* p,
                                                         const void* out, rfa_cuda_strides out_strides,
                                                         const int64_t* host_doc_bounds, void* workspace,
                                                         size_t workspace_bytes, cudaStream_t stream);

/* Adds the dK and dV that the context's last forward or backward,
 * rfa_cudnn_backward_holding_key_gradients of the same block and `workspace`, left there, to
 * p->dk and p->dv (fp32, with their strides; grad_mode RFA_CUDA_GRAD_ACCUMULATE_FP32), on
 * `stream`: the backward's stream, or one ordered after it. Once: the hold ends with a
 * successful addition. A forward or backward on the context in between (which may write over
 * the workspace), another workspace, a block of another band (its rows, dtype, batch, K/V heads
 * or head dim), or a second addition is RFA_CUDA_ERROR_INVALID_ARGUMENT, nothing added; plans and
 * the band queries leave the hold. Nothing else may write the workspace in between. */
rfa_cuda_status rfa_cudnn_add_held_key_gradients(rfa_cudnn_context* context, const rfa_cuda_backward_params* p,
                                                 const int64_t* host_doc_bounds, void* workspace, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif /* RFA_CUDA_CUDNN_ATTENTION_H */
