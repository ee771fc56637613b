/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file rfa.h
 * @brief The C interface of rfa, ring (context-parallel) flash attention.
 *
 * Pure C99: no C++, Kokkos, CUDA or MPI type appears here. Entry points that take an MPI
 * communicator are declared in rfa_mpi.h.
 *
 * Conventions shared by every function:
 * - Every function but rfa_get_error_string() and rfa_get_last_error_message() (which return
 *   strings) returns an ::rfa_result_t; ::RFA_SUCCESS is 0. On failure,
 *   rfa_get_last_error_message() gives a detailed message for the calling thread.
 * - No C++ exception ever crosses this interface.
 * - Thread safety: different handles may be used from different threads at once, given
 *   MPI_THREAD_MULTIPLE and a communicator of their own each; calls on one handle must be
 *   serialized by the caller. The error-query functions are thread-safe.
 */
#ifndef RFA_H
#define RFA_H

#include <stddef.h>
#include <stdint.h>

#include "rfa/rfa_config.h"
#include "rfa/rfa_version.h"

#if defined(_WIN32)
#define RFA_API __declspec(dllexport)
#elif defined(__GNUC__)
/** Marks a symbol exported from the shared library. */
#define RFA_API __attribute__((visibility("default")))
#else
#define RFA_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/**
 * @brief Result codes. Values are explicit and append-only: a value never changes meaning.
 */
typedef enum rfa_result_t {
  RFA_SUCCESS = 0,                 /**< The call succeeded. */
  RFA_ERROR_INVALID_ARGUMENT = 1,  /**< An argument is invalid on this rank (null pointer, bad size, ...). */
  RFA_ERROR_INVALID_USAGE = 2,     /**< Arguments are inconsistent across ranks, or a call is out of order. */
  RFA_ERROR_UNSUPPORTED = 3,       /**< Valid, but not supported by this build (head dim, dtype, backend); also
                                        the result of every call but the two string queries and
                                        rfa_report_binding_error() on a CPU that lacks an
                                        instruction set the library was compiled for
                                        (-march=native elsewhere). */
  RFA_ERROR_OUT_OF_MEMORY = 4,     /**< An allocation failed. */
  RFA_ERROR_INTERNAL = 5,          /**< A bug in rfa: please report it with the message. */
  RFA_ERROR_MPI = 6,               /**< An MPI call failed. */
  RFA_ERROR_NCCL = 7,              /**< An NCCL call failed or NCCL reported an asynchronous error. */
  RFA_ERROR_CUDA = 8,              /**< A CUDA runtime call or kernel launch failed. */
  RFA_ERROR_HWLOC = 9,             /**< hwloc could not load or query the topology. */
  RFA_ERROR_KOKKOS = 10,           /**< Kokkos failed to initialize or to allocate. */
  RFA_ERROR_VERSION_MISMATCH = 11, /**< The header and the library have different major versions, or the
                                        program's MPI is of another family (Open MPI, MPICH) than the
                                        one librfa was built with. */
  RFA_ERROR_TIMEOUT = 12,          /**< A communication did not complete in time and was abandoned (a rank
                                        is late, stuck or gone, or device work rfa waits for, a staged copy
                                        or the work queued on a CUDA context's stream, never finishes;
                                        options.timeout_s, RFA_TIMEOUT_S, RFA_NCCL_TIMEOUT_S). The context is
                                        unusable from then on: every call but rfa_context_destroy(), the
                                        queries (rfa_context_get_*) and the local sharding helpers fails
                                        with ::RFA_ERROR_INVALID_USAGE, and buffers passed to the failed
                                        call must not be reused while the
                                        job runs on. Like NCCL after an abort, the job should end
                                        (MPI_Abort). */
  RFA_ERROR_CALL_MISMATCH = 13,    /**< The ranks of a context are in different collective calls (one calls
                                        rfa_forward() while another calls rfa_backward(), or one made a call
                                        the others did not), found before the call moved any data; the
                                        message names what each side called. Every rank that took part fails
                                        with it; the context is unusable from then on, as after
                                        ::RFA_ERROR_TIMEOUT. */
  RFA_ERROR_NONFINITE = 14         /**< The value checks (options.check_values, RFA_CHECK_VALUES) found NaN or
                                        infinity in a tensor; the message names the tensor, the rank and the
                                        first position. In an input: nothing was computed or written. In an
                                        output: the outputs are written but must not be trusted. */
} rfa_result_t;

/** @brief Storage data types of Q, K, V, the output and the gradients. Accumulation is always fp32. */
typedef enum rfa_dtype_t {
  RFA_DTYPE_FLOAT32 = 0,  /**< IEEE binary32. */
  RFA_DTYPE_BFLOAT16 = 1, /**< bfloat16 (8-bit exponent, 7-bit mantissa). */
  RFA_DTYPE_FLOAT16 = 2   /**< IEEE binary16. */
} rfa_dtype_t;

/** @brief Attention masks, applied on global token positions. */
typedef enum rfa_mask_t {
  RFA_MASK_NONE = 0,   /**< Every query sees every key. */
  RFA_MASK_CAUSAL = 1, /**< A query at position i sees keys at positions j <= i. */
  RFA_MASK_RANGES = 2  /**< A query sees the keys some entry of rfa_options_t::mask_ranges gives it
                            (the union of the entries; docs/masks.md). */
} rfa_mask_t;

/**
 * @brief Which pairs of its rectangle an entry of a mask given as ranges (::rfa_mask_range_t)
 *        lets through. Positions are global token positions; "offset" below is k - q.
 */
typedef enum rfa_range_kind_t {
  RFA_RANGE_FULL = 0,       /**< Every (query, key) pair of the rectangle. */
  RFA_RANGE_CAUSAL = 1,     /**< Causal, aligned at the bottom right: k - k_end <= q - q_end, so the last
                                 query sees every key (for a square aligned rectangle, k <= q). */
  RFA_RANGE_ANTICAUSAL = 2, /**< The rest of the rectangle: k - k_end > q - q_end (CAUSAL and
                                 ANTICAUSAL entries on one rectangle make it FULL). */
  RFA_RANGE_BAND = 3        /**< A diagonal band: band_lo <= (k - k_begin) - (q - q_begin) <= band_hi,
                                 offsets counted from the rectangle's top-left corner. */
} rfa_range_kind_t;

/**
 * @brief One entry of a mask given as ranges: queries [q_begin, q_end) see the keys
 *        [k_begin, k_end) that @p kind lets through.
 *
 * Bounds are global token positions, 0 <= begin <= end <= seq_total; an empty range
 * (begin == end) lets nothing through. The helpers rfa_mask_ranges_causal() and the others of
 * the group "Masks as ranges" build the common masks.
 */
typedef struct rfa_mask_range_t {
  int64_t q_begin;       /**< First query position. */
  int64_t q_end;         /**< One past the last query position. */
  int64_t k_begin;       /**< First key position. */
  int64_t k_end;         /**< One past the last key position. */
  int64_t band_lo;       /**< ::RFA_RANGE_BAND: the lowest offset from the top-left diagonal, above -2^61; ignored
                              otherwise. */
  int64_t band_hi;       /**< ::RFA_RANGE_BAND: the highest offset, >= band_lo and below 2^61; ignored otherwise. */
  rfa_range_kind_t kind; /**< Which pairs of the rectangle are visible. */
} rfa_mask_range_t;

/**
 * @brief How the global sequence is split over the P ranks of the ring (docs/architecture.md §4).
 *
 * The ring position r (0..P-1) decides which tokens a rank holds.
 */
typedef enum rfa_layout_t {
  RFA_LAYOUT_CONTIGUOUS = 0, /**< Rank r holds chunk r of P equal chunks (S % P == 0). */
  RFA_LAYOUT_ZIGZAG = 1,     /**< S cut into 2P chunks; rank r holds chunks r and 2P-1-r (S % 2P == 0). */
  RFA_LAYOUT_STRIPE = 2,     /**< Token t lives on rank t mod P (S % P == 0). */
  /** S cut into 8P equal chunks, eight per rank, assigned by the work the mask leaves in each
   *  (its visible scores, every batch entry's), so that ranks hold nearly equal work under any
   *  mask (S % 8P == 0; a hybrid of R = P / ulysses_degree > 1 ring groups deals 8R chunks to
   *  the groups instead and needs S % 8R == 0, with each group's S / R rows a multiple of
   *  ulysses_degree; docs/masks.md). Each rank's chunks are in
   *  position order. The same on every rank for the same options;
   *  rfa_context_get_local_positions() says which rows a rank holds, and the context's sharding
   *  helpers place them. Host contexts only. */
  RFA_LAYOUT_BALANCED = 3
} rfa_layout_t;

/**
 * @brief How the attention is parallelized over the ranks (docs/architecture.md §8). Every
 *        strategy takes the same local tensors and computes the same result; they differ in
 *        what they send and hold (see the decision table in docs/strategies.md).
 */
typedef enum rfa_strategy_t {
  RFA_STRATEGY_RING = 0,      /**< K/V blocks travel around the ring while each rank computes. The default. */
  RFA_STRATEGY_ULYSSES = 1,   /**< All-to-all to whole sequences of H/P heads, one local attention, all-to-all
                                   back. heads % P == 0. */
  RFA_STRATEGY_ALLGATHER = 2, /**< K and V all-gathered in head chunks, local queries attend to all of them;
                                   dK/dV reduce-scattered in fp32. */
  RFA_STRATEGY_HYBRID = 3,    /**< Ulysses inside groups of ulysses_degree consecutive ring positions (one node),
                                   the ring across the groups. */
  RFA_STRATEGY_AUTO = 4,      /**< The strategy, Ulysses degree and layout the performance model predicts
                                   fastest for a forward plus a backward on these ranks (options.layout and
                                   ulysses_degree are then chosen too; ulysses_degree must be 0). The same on
                                   every rank; rfa_context_get_options() reports the choice and
                                   rfa_context_get_plan() why. Devices choose among the ring's layouts.
                                   With the environment variable RFA_PLAN_MEASURE=PCT (alike on every rank)
                                   rfa_context_create() times a forward and a backward pass of each plan the
                                   model predicts within PCT percent of its best (at most 6, synthetic
                                   inputs of these shapes, on these ranks; no plan starts after 60 s of
                                   it) and takes the fastest. Unset, it does so at 15% where the ranks span
                                   several hosts (0 turns it off) and not on one host. */
  RFA_STRATEGY_NEEDED = 5     /**< Needed-only exchange: each rank receives, straight from their owners, only
                                   the K/V rows its queries see under the mask (a halo exchange for a
                                   neighbourhood mask), one round per ring distance at which some rank sees
                                   another's keys; the backward returns those rows' dK/dV in fp32. Memory per
                                   rank is bounded by the local rows (each round moves at most L rows each
                                   way). Host contexts only; docs/strategies.md. */
} rfa_strategy_t;

/** @brief How ranks are placed on the ring. */
typedef enum rfa_ring_order_t {
  RFA_RING_ORDER_DEFAULT = 0,  /**< Take RFA_RING_ORDER from the environment, else topology order. */
  RFA_RING_ORDER_IDENTITY = 1, /**< Ring position = rank in the communicator. */
  RFA_RING_ORDER_TOPOLOGY = 2, /**< Order from the hardware topology (hwloc, host, PCI). */
  RFA_RING_ORDER_FILE = 3      /**< Order read from a file (RFA_RING_ORDER=file:PATH). */
} rfa_ring_order_t;

/** @brief Where a context's tensors live and its attention runs (docs/architecture.md §8). */
typedef enum rfa_device_t {
  RFA_DEVICE_HOST = 0, /**< Host memory, the portable kernels on the CPU. The default. */
  RFA_DEVICE_CUDA = 1  /**< CUDA device memory of the caller's current device, the CUDA kernels on the
                            context's stream (rfa_context_set_stream()). Needs rfa built against a
                            CUDA-enabled Kokkos (rfa_config.h); otherwise ::RFA_ERROR_UNSUPPORTED. */
} rfa_device_t;

/** @brief What moves the blocks of a ::RFA_DEVICE_CUDA context between ranks. The environment
 *  variable RFA_TRANSPORT=nccl|mpi, when set, overrides this option (on every rank alike) on
 *  CUDA contexts; a host context given ::RFA_TRANSPORT_NCCL in its options is refused before the
 *  environment is read. */
typedef enum rfa_transport_t {
  RFA_TRANSPORT_DEFAULT = 0, /**< NCCL when rfa was built with it, else MPI. Host contexts: MPI. */
  RFA_TRANSPORT_MPI = 1,     /**< MPI: CUDA-aware if the MPI library says so at run time, else staged
                                  through pinned host buffers. Several ranks may share one GPU. */
  RFA_TRANSPORT_NCCL = 2     /**< NCCL: one GPU per rank (ranks sharing a GPU are refused). A host context
                                  given it fails creation with ::RFA_ERROR_UNSUPPORTED. */
} rfa_transport_t;

/** @brief Whether calls check their tensors for NaN and infinity (options.check_values). */
typedef enum rfa_value_checks_t {
  RFA_VALUE_CHECKS_DEFAULT = 0, /**< The environment variable RFA_CHECK_VALUES decides: 1 on, 0 (or unset) off. */
  RFA_VALUE_CHECKS_OFF = 1,     /**< No checks. */
  RFA_VALUE_CHECKS_ON = 2       /**< rfa_forward() and rfa_backward() scan their inputs before anything moves and
                                     their outputs after computing; a NaN or infinity anywhere (an lse of -inf,
                                     a query that sees no key, is allowed under ::RFA_MASK_RANGES, the one
                                     mask that can leave a query none) fails the call on every rank with
                                     ::RFA_ERROR_NONFINITE naming the tensor, the ring position and the first
                                     element. One read of each tensor, on the context's device. */
} rfa_value_checks_t;

/** @brief Which kernels compute the ring steps of a ::RFA_DEVICE_CUDA context
 *  (options.cuda_kernels). Host contexts always run rfa's host kernels: there every value but
 *  ::RFA_CUDA_KERNELS_CUDNN is taken, and cuDNN (asked for here, or by RFA_CUDA_KERNELS=cudnn
 *  with the default) fails creation with ::RFA_ERROR_UNSUPPORTED. */
typedef enum rfa_cuda_kernels_t {
  RFA_CUDA_KERNELS_DEFAULT = 0, /**< The environment variable RFA_CUDA_KERNELS decides (auto, rfa or cudnn); unset:
                                     ::RFA_CUDA_KERNELS_AUTO. */
  RFA_CUDA_KERNELS_AUTO = 1,    /**< cuDNN's fused attention as ::RFA_CUDA_KERNELS_CUDNN where every rank
                                     can load cuDNN and the strategy takes it (not the KV all-gather),
                                     else rfa's kernels: cuDNN was the fastest at every shape measured
                                     (docs/gpus.md). */
  RFA_CUDA_KERNELS_RFA = 2,     /**< rfa's own CUDA kernels for every step. */
  RFA_CUDA_KERNELS_CUDNN = 3    /**< cuDNN's fused attention for every step it can express exactly (every step
                                     of the contiguous, zigzag and stripe layouts, with or without causal
                                     mask and window); rfa's kernels for the others (a step a document
                                     boundary crosses, and a deterministic backward). cuDNN writes each
                                     step's output and gradients in the storage dtype before rfa merges
                                     and accumulates them in fp32: one rounding more per step than on
                                     rfa's kernels. Creation fails on every rank with
                                     ::RFA_ERROR_UNSUPPORTED, and the reason, where cuDNN cannot be used
                                     (needs cuDNN 9.10.2 or newer). */
} rfa_cuda_kernels_t;

/**
 * @brief The static text for a result code.
 *
 * Not collective; thread-safe.
 * @param code any value; unknown values give "unknown rfa result code".
 * @return a string that lives forever; never NULL.
 */
RFA_API const char* rfa_get_error_string(rfa_result_t code);

/**
 * @brief The detailed message of the calling thread's last rfa call, if it failed.
 *
 * Not collective; thread-safe (each thread has its own message). Every rfa call but
 * rfa_get_error_string() and rfa_get_last_error_message() sets it: to its reason when it fails,
 * to "" when it succeeds (rfa_report_binding_error() to the message it is given, or leaves it
 * for ::RFA_SUCCESS).
 * @return a thread-local string, valid until the next rfa call on this thread; "" where the
 *         last call succeeded or there was none.
 */
RFA_API const char* rfa_get_last_error_message(void);

/**
 * @brief For language bindings (the Fortran module): records a failure that the binding found
 *        itself (an array whose shape does not match the context, say) as the calling thread's
 *        last error, so that rfa_get_last_error_message() reports it.
 *
 * Not collective. A binding that finds such an error in a collective call must still make
 * the call fail on every rank (the Fortran module passes a NULL buffer, which every rank
 * agrees on), then report the real reason with this.
 * @param code the ::rfa_result_t to return; ::RFA_SUCCESS records nothing.
 * @param message the message; NULL records "".
 * @return code.
 */
RFA_API rfa_result_t rfa_report_binding_error(rfa_result_t code, const char* message);

/**
 * @brief The version of the linked library.
 *
 * Not collective; thread-safe; may be called before any context exists or after rfa_finalize().
 * @param[out] major the major version; may be NULL.
 * @param[out] minor the minor version; may be NULL.
 * @param[out] patch the patch version; may be NULL.
 * @return ::RFA_SUCCESS; ::RFA_ERROR_UNSUPPORTED, nothing written, on a CPU that lacks an
 *         instruction set the library was compiled for (as every call).
 */
RFA_API rfa_result_t rfa_get_version(int* major, int* minor, int* patch);

/**
 * @brief Checks that the library's major version matches the header's.
 *
 * Not collective; thread-safe; may be called before any context exists or after rfa_finalize().
 * @param header_major pass ::RFA_VERSION_MAJOR; the macro rfa_check_version() does so.
 * @return ::RFA_SUCCESS, or ::RFA_ERROR_VERSION_MISMATCH with a message naming both versions;
 *         ::RFA_ERROR_UNSUPPORTED on a CPU that lacks an instruction set the library was
 *         compiled for (as every call).
 */
RFA_API rfa_result_t rfa_check_version_major(int header_major);

/** @brief Checks the linked library against the header this file was compiled with. */
#define rfa_check_version() rfa_check_version_major(RFA_VERSION_MAJOR)

/* ------------------------------------------------------------------------------------------ */
/** @name Options
 * @{ */

/** @brief The layout version of ::rfa_options_t this header describes; rfa_options_init() stores it. */
#define RFA_OPTIONS_VERSION 1

/**
 * @brief Everything a context needs to know about the attention problem, the same on every rank.
 *
 * Versioned: fill it with rfa_options_init() first, then change fields. New fields are only
 * ever appended, each with 0 (its default) asking for nothing new, and the library reads
 * min(struct_size, its own sizeof) bytes as fields (any bytes past its own struct it only
 * checks to be 0, below), so a program compiled against an older header keeps
 * working (fields it does not know take their defaults). A program compiled against a newer
 * header, run with an older library, gets the fields that library lacks zeroed by
 * rfa_options_init(); one of them set (any byte past the library's struct not 0) fails
 * rfa_context_create() with ::RFA_ERROR_UNSUPPORTED naming its byte, rather than being
 * ignored. A struct_size that ends inside a field (not a multiple of 8), or above 4096, is no
 * version's and is refused.
 *
 * Shapes are those of docs/architecture.md §2: the whole sequence has seq_total tokens, of which each of
 * the P ranks holds seq_total / P (see ::rfa_layout_t for the divisibility rules).
 */
/* The field comments below are kept aligned as a table by hand. */
/* clang-format off */
typedef struct rfa_options_t {
  size_t struct_size;          /**< sizeof(rfa_options_t) as the caller was compiled; set by rfa_options_init(). */
  int32_t version;             /**< The layout version rfa_options_init() stores (the library's ::RFA_OPTIONS_VERSION); >= 1. */
  rfa_layout_t layout;         /**< How the sequence is split over the ring. Default ::RFA_LAYOUT_ZIGZAG. */
  rfa_mask_t mask;             /**< The attention mask. Default ::RFA_MASK_CAUSAL. */
  rfa_dtype_t dtype;           /**< Storage type of q, k, v, out, dout and the gradients. Default ::RFA_DTYPE_BFLOAT16. */
  rfa_ring_order_t ring_order; /**< How ranks are placed on the ring. Default ::RFA_RING_ORDER_DEFAULT. */
  double softmax_scale;        /**< Multiplies QK^T (applied in fp32); 0 means 1/sqrt(head_dim). Otherwise
                                    finite, > 0 and, as an fp32, neither 0 nor infinite (up to about 2.36e38
                                    in effect: docs/supported.md); others are ::RFA_ERROR_INVALID_ARGUMENT.
                                    Default 0. */
  int64_t batch;               /**< Sequences per call, B >= 1. Default 1. */
  int64_t seq_total;           /**< Tokens of one whole sequence over all ranks, S >= 1. Default 0: must be set. */
  int64_t heads;               /**< Query heads H >= 1. Default 1. */
  int64_t kv_heads;            /**< Key/value heads Hkv >= 1 dividing H (GQA, MQA). Default 1. */
  int64_t head_dim;            /**< Head dimension d of q and k (and of v unless value_head_dim says otherwise):
                                    a multiple of 8, at most 256 (CUDA: 32, 64, 128, 192 or 256;
                                    192 with value_head_dim 128). Default 64. */
  rfa_device_t device;         /**< Where tensors live and attention runs. Default ::RFA_DEVICE_HOST. */
  rfa_transport_t transport;   /**< Device contexts: what moves blocks. Default ::RFA_TRANSPORT_DEFAULT. */
  double timeout_s;            /**< Seconds a blocking operation (over MPI: creation's agreement, argument
                                    agreements, ring exchanges, collectives, and where device buffers are
                                    staged through pinned host memory the copies to and from it, which
                                    wait for the kernels queued before them; over NCCL: its creation,
                                    exchanges, collectives and destruction; on a CUDA context every
                                    wait for its stream, inside calls and in rfa_context_synchronize(),
                                    rfa_context_release_workspace() and rfa_context_destroy()) waits for the other ranks
                                    or the device before failing with ::RFA_ERROR_TIMEOUT. 0 (default): the environment
                                    variable RFA_TIMEOUT_S if set, else 600, for MPI's waits, and
                                    RFA_NCCL_TIMEOUT_S if set, else 300, for NCCL's; negative, or more
                                    than 1e9 (about 30 years): no deadline. Must be finite (infinities and
                                    NaN are ::RFA_ERROR_INVALID_ARGUMENT). After a timeout the context is unusable (see
                                    ::RFA_ERROR_TIMEOUT). */
  rfa_strategy_t strategy;     /**< The context-parallel strategy. Default ::RFA_STRATEGY_RING. */
  int32_t ulysses_degree;      /**< Ranks per Ulysses group: 0 (or P) for ::RFA_STRATEGY_ULYSSES; Pu >= 1 dividing
                                    P and heads for ::RFA_STRATEGY_HYBRID (a Pu x P/Pu grid); 0 otherwise.
                                    Default 0. */
  int64_t window;              /**< Sliding window on global token positions: a key is visible to a query
                                    only if q_pos - k_pos < window, with or without the causal mask
                                    (without it, keys after the query stay visible). 0 (default): no
                                    window; otherwise >= 1. Host and CUDA contexts. Ring steps whose
                                    whole K/V block lies outside every local query's window run no
                                    kernel. */
  const int64_t* doc_boundaries; /**< Packed documents: doc_boundary_count cumulative boundaries
                                    0 = b[0] <= b[1] <= ... <= b[n] = seq_total (as FlashAttention's
                                    cu_seqlens); document d holds global positions [b[d], b[d+1]) and a
                                    key is visible only to queries of its own document (with the causal
                                    mask and the window on top). Any lengths: no divisibility rule per
                                    document. Copied at rfa_context_create() (the caller's array may be
                                    freed after it) and checked there, on every rank, to start at 0,
                                    never decrease, end at seq_total and be identical on every rank.
                                    rfa_context_get_options() returns a pointer to the context's copy.
                                    NULL (default) with count 0: one document (a non-NULL list with count
                                    0 is ::RFA_ERROR_INVALID_ARGUMENT). Host and CUDA contexts
                                    (copied to the device there).
                                    Ring steps whose K/V block shares no document with the local queries
                                    run no kernel. */
  int64_t doc_boundary_count;  /**< Number of values in doc_boundaries (documents + 1), or 0 (default). */
  rfa_value_checks_t check_values; /**< NaN/infinity checks of every call's tensors. Default
                                        ::RFA_VALUE_CHECKS_DEFAULT (RFA_CHECK_VALUES decides, at creation);
                                        rfa_context_get_options() returns ON or OFF as resolved. */
  rfa_cuda_kernels_t cuda_kernels; /**< The kernels of a CUDA context's ring steps. Default
                                        ::RFA_CUDA_KERNELS_DEFAULT. rfa_context_get_options() returns what
                                        runs: ::RFA_CUDA_KERNELS_CUDNN or ::RFA_CUDA_KERNELS_RFA (always RFA
                                        for host contexts). */
  int32_t deterministic;       /**< Nonzero: rfa_backward()'s gradients are bitwise the same from run to run
                                    with the same ranks and inputs. CUDA contexts: rfa's deterministic dQ
                                    pass (no atomics; cuDNN's backward is not used); host contexts:
                                    the key tiles of a head are not split over threads (no atomic dQ
                                    sums), which leaves threads idle where batch x kv_heads is small.
                                    Default 0. */
  int32_t attention_sinks;     /**< Nonzero: every query head has a learned sink logit that joins each row's
                                    softmax denominator once (docs/variants.md); the context's calls are
                                    then rfa_forward_with_sinks() and rfa_backward_with_sinks(), and
                                    rfa_forward() / rfa_backward() are refused (and the other way round
                                    on a context without sinks). Any strategy, layout, device.
                                    rfa_context_get_options() returns 0 or 1. Default 0. */
  double softcap;              /**< Soft-capped scores: > 0 replaces each scaled score s = scale * q.k by
                                    softcap * tanh(s / softcap) before the mask and the softmax (as Gemma's
                                    models do), forward and backward (docs/variants.md); applied in fp32.
                                    0: scores as they are. Finite, >= 0 and within fp32's range (up to about
                                    2.36e38 in effect, docs/variants.md), else ::RFA_ERROR_INVALID_ARGUMENT.
                                    Any strategy, layout, dtype; on CUDA
                                    contexts rfa's sm80 kernels apply it (capped blocks run there whatever
                                    the kernel choice: cuDNN and the Hopper path do not cap), which hold
                                    softcap / scale and its inverse in fp32: a ratio outside 1.2e-38 ..
                                    8.5e37 is ::RFA_ERROR_UNSUPPORTED there. Default 0. */
  const rfa_mask_range_t* mask_ranges; /**< With ::RFA_MASK_RANGES: mask_range_count entries whose union is the
                                    mask (docs/masks.md); the window and the documents, if set, still
                                    apply on top (a pair must pass both). Copied at rfa_context_create()
                                    and checked there on every rank (bounds within seq_total, no
                                    reversed range, known kinds, band_lo <= band_hi) and across ranks
                                    (a hash of the entries); rfa_context_get_options() returns a pointer
                                    to the context's copy. Any layout and strategy, host and CUDA contexts
                                    (rfa's sm80 kernels take these blocks whatever the kernel choice).
                                    Ring steps whose K/V block no local query sees run no kernel.
                                    NULL (default) with count 0 for the other masks; a non-NULL list
                                    with count 0 is ::RFA_ERROR_INVALID_ARGUMENT. */
  int64_t mask_range_count;    /**< Number of entries in mask_ranges, >= 0 (0 with ::RFA_MASK_RANGES: every
                                    key hidden). Default 0. */
  const int64_t* doc_boundary_offsets; /**< Per-sequence documents: batch + 1 offsets o[0] = 0 <= o[1] <=
                                    ... <= o[batch] = doc_boundary_count into doc_boundaries; batch entry
                                    e's documents are doc_boundaries[o[e] .. o[e+1]), a list of the form
                                    doc_boundaries takes (0 to seq_total), or no values for one document
                                    (docs/variants.md). NULL (default) with count 0: doc_boundaries serves
                                    every entry (a non-NULL list with count 0 is
                                    ::RFA_ERROR_INVALID_ARGUMENT). Copied at rfa_context_create() and checked there on every
                                    rank, entry by entry, and across ranks (a hash of the offsets besides
                                    that of the boundaries); rfa_context_get_options() returns a pointer to
                                    the context's copy. Any layout and strategy, host and CUDA contexts
                                    (rfa's sm80 kernels take such blocks whatever the kernel choice:
                                    cuDNN and the Hopper path take one list). A ring step runs where
                                    some entry's queries see the block. */
  int64_t doc_boundary_offset_count; /**< Number of values in doc_boundary_offsets: batch + 1, or 0 (default). */
  int64_t value_head_dim;      /**< Head dimension of V, out, dout and dv where it differs from head_dim (the
                                    head dim of q, k, dq and dk), as multi-head latent attention's 192 / 128
                                    (docs/variants.md): a multiple of 8, at most 256, host contexts; CUDA
                                    contexts take value_head_dim = head_dim, or the dims 192 / 128
                                    (head_dim 192, value_head_dim 128). 0 (default): head_dim.
                                    Those tensors are then [B][L][heads][value_head_dim] and
                                    [B][L][kv_heads][value_head_dim] (the sharding helpers' _dim forms take
                                    them); the default softmax scale stays 1/sqrt(head_dim).
                                    rfa_context_get_options() returns 0 where it equals head_dim, so
                                    that options copied from a context and given another head_dim keep
                                    one head dim. */
} rfa_options_t;
/* clang-format on */

/**
 * @brief Fills the first @p struct_size bytes of @p options with the defaults (zeros past the
 *        library's own struct), and sets struct_size and version.
 *
 * The size comes from the caller so that a program compiled against an older, smaller
 * struct is never written past its end. A program compiled against a newer, larger one gets
 * the fields this library knows filled and the bytes past them zeroed (the fields this library
 * lacks, at the value that asks for nothing new); struct_size is the caller's either way. Call
 * it through rfa_options_init(), which passes the size the caller was compiled with. Not
 * collective; thread-safe.
 * @param[out] options the struct to fill.
 * @param struct_size sizeof(rfa_options_t) as the caller sees it.
 * @return ::RFA_SUCCESS, or ::RFA_ERROR_INVALID_ARGUMENT if @p options is NULL or
 *         @p struct_size is smaller than version 1 of the struct, above 4096 or ends inside a
 *         field (not a multiple of 8, as no version's sizeof is); nothing is written then.
 *         ::RFA_ERROR_UNSUPPORTED, nothing written, on a CPU that lacks an instruction set the
 *         library was compiled for (as every call).
 */
RFA_API rfa_result_t rfa_options_init_sized(rfa_options_t* options, size_t struct_size);

/**
 * @brief Fills @p options with the defaults and sets struct_size and version.
 *
 * Not collective; thread-safe.
 * @param[out] options the struct to fill.
 * @return as rfa_options_init_sized(): ::RFA_SUCCESS, or ::RFA_ERROR_INVALID_ARGUMENT if
 *         @p options is NULL, or ::RFA_ERROR_UNSUPPORTED on a CPU the library cannot run on.
 */
static inline rfa_result_t rfa_options_init(rfa_options_t* options) {
  return rfa_options_init_sized(options, sizeof(rfa_options_t));
}

/** @} */

/* ------------------------------------------------------------------------------------------ */
/** @name Contexts
 * @{ */

/**
 * @brief An opaque handle to a ring: its communicator, its options and its ring position.
 *
 * Created collectively by rfa_context_create() (rfa_mpi.h), destroyed by rfa_context_destroy().
 * Never given out twice in a process: a copy of a destroyed handle stays invalid (every call
 * given it returns RFA_ERROR_INVALID_ARGUMENT, rfa_context_destroy() after its check of MPI's
 * thread level), whatever was created since.
 * One handle must be used by one thread at a time; different handles, each created over a
 * communicator of its own, may be used concurrently if the MPI library was initialized with
 * MPI_THREAD_MULTIPLE. Below it, a call that uses MPI while another thread of the process is
 * inside one, or (below MPI_THREAD_SERIALIZED) from a thread other than MPI's main one, returns
 * ::RFA_ERROR_INVALID_USAGE on its rank before any MPI call, the context untouched.
 */
typedef struct rfa_context_s* rfa_context_t;

/**
 * @brief Destroys a context and frees its private communicator. Destroying NULL does nothing.
 *
 * Collective over the context's ranks (it frees an MPI communicator): every rank destroys its
 * handle, in the same order relative to other collective calls. Call it before MPI_Finalize.
 * The ranks first agree that they are all destroying the context (one small reduction, under
 * the deadline): a rank that is in another call on it meanwhile makes both sides fail with
 * ::RFA_ERROR_CALL_MISMATCH. The handle is destroyed whatever the result, but for a call that
 * MPI's thread level refuses (::RFA_ERROR_INVALID_USAGE before anything is done: the handle stays
 * valid, to be destroyed in turn). On a context that is
 * unusable (after ::RFA_ERROR_TIMEOUT or ::RFA_ERROR_CALL_MISMATCH) or after MPI_Finalize there
 * is no agreement and nothing waits; exchanges a failed call left unfinished are given up at the
 * deadline at the latest (receives cancelled, the rest left to MPI), so it never blocks longer.
 * After MPI_Finalize it frees the memory but cannot free the MPI communicator. A CUDA context
 * then waits, by the deadline, for its last call to end on the device; where it has not ended by
 * then (a kernel that never ends, such as the caller's own work queued before it), the context's
 * memory and communicator are kept for the life of the process instead of freed (the work may
 * still use them, and freeing device memory would wait for it). In a child of fork() (a fork of
 * the process that created the context) it releases the handle alone, with no MPI or device
 * call: the context's communicator and device state are the parent's; there every call that
 * communicates or touches the device returns ::RFA_ERROR_INVALID_USAGE.
 * @param context the handle, or NULL.
 * @return ::RFA_SUCCESS; ::RFA_ERROR_CALL_MISMATCH, ::RFA_ERROR_TIMEOUT or ::RFA_ERROR_MPI
 *         (an MPI failure) from the agreement, or ::RFA_ERROR_TIMEOUT from the wait for the
 *         device (the handle is gone all the same); ::RFA_ERROR_INVALID_USAGE for a call MPI's
 *         thread level refuses (checked first); the handle must not be used again: every call
 *         given a destroyed or never-created handle (destroy included) returns
 *         ::RFA_ERROR_INVALID_ARGUMENT.
 */
RFA_API rfa_result_t rfa_context_destroy(rfa_context_t context);

/**
 * @brief The options the context was created with (after defaults were applied).
 *
 * Not collective. Writes min(options->struct_size, sizeof(rfa_options_t)) bytes, and zeros
 * past this library's struct where the caller's is larger (so that the options create a context
 * again); doc_boundaries, doc_boundary_offsets and mask_ranges then point to the context's own
 * copies, valid until rfa_context_destroy().
 * @param context a live context.
 * @param[in,out] options struct_size must be set (rfa_options_init() does so); the rest is written.
 * @return ::RFA_SUCCESS, or ::RFA_ERROR_INVALID_ARGUMENT for a NULL argument or a struct_size
 *         smaller than version 1 of the struct, above 4096 or ending inside a field (not a
 *         multiple of 8).
 */
RFA_API rfa_result_t rfa_context_get_options(rfa_context_t context, rfa_options_t* options);

/**
 * @brief What the context runs and why, as text: for ::RFA_STRATEGY_AUTO the chosen strategy,
 *        Ulysses degree and layout with their predicted forward and backward time per rank and
 *        the runners-up (or, where the plans were measured: RFA_PLAN_MEASURE, or by default across
 *        hosts, the measured times of the plans timed and the model's own first plan); otherwise
 *        the strategy the caller chose.
 *
 * Not collective. The text is the same on every rank.
 * @param context a live context.
 * @param[out] text receives the text, NUL-terminated, cut to @p capacity - 1 characters.
 * @param capacity the size of @p text in bytes, at least 1.
 * @return ::RFA_SUCCESS, or ::RFA_ERROR_INVALID_ARGUMENT for a NULL argument or a capacity below 1.
 */
RFA_API rfa_result_t rfa_context_get_plan(rfa_context_t context, char* text, int64_t capacity);

/**
 * @brief This rank's ring position r (0..P-1): it decides which tokens this rank must hold.
 *
 * The position is chosen by the ring-order policy and may differ from the rank in the
 * communicator passed to rfa_context_create(). Not collective.
 * @param context a live context.
 * @param[out] position receives r.
 * @return ::RFA_SUCCESS, or ::RFA_ERROR_INVALID_ARGUMENT for a NULL argument.
 */
RFA_API rfa_result_t rfa_context_get_position(rfa_context_t context, int* position);

/**
 * @brief The number of ranks P on the ring. Not collective.
 * @param context a live context.
 * @param[out] ranks receives P.
 * @return ::RFA_SUCCESS, or ::RFA_ERROR_INVALID_ARGUMENT for a NULL argument.
 */
RFA_API rfa_result_t rfa_context_get_ranks(rfa_context_t context, int* ranks);

/**
 * @brief The number of tokens each rank holds, L = seq_total / P. Not collective.
 * @param context a live context.
 * @param[out] local_seq receives L.
 * @return ::RFA_SUCCESS, or ::RFA_ERROR_INVALID_ARGUMENT for a NULL argument.
 */
RFA_API rfa_result_t rfa_context_get_local_seq(rfa_context_t context, int64_t* local_seq);

/**
 * @brief The global token position of each of this rank's L local rows, in local row order.
 *
 * Not collective. Local row i of every tensor of this rank holds global token positions[i].
 * @param context a live context.
 * @param[out] positions an array of at least L elements.
 * @param capacity the number of elements of @p positions.
 * @return ::RFA_SUCCESS, or ::RFA_ERROR_INVALID_ARGUMENT for a NULL argument or a capacity below L.
 */
RFA_API rfa_result_t rfa_context_get_local_positions(rfa_context_t context, int64_t* positions, int64_t capacity);

/**
 * @brief Hands rfa the caller's CUDA stream: a ::RFA_DEVICE_CUDA context enqueues all its
 *        device work (kernels, copies, NCCL) on it, ordered after the work already there.
 *
 * Not collective. The stream is a cudaStream_t passed as void* (rfa.h stays free of CUDA
 * types); NULL is the legacy default stream, which is also the default. It must belong to the
 * caller's current device and outlive every call that uses it (not the context:
 * rfa_context_destroy() waits for the context's work without it). rfa_forward() and
 * rfa_backward() return once their work is queued, without synchronizing the device: the
 * results are ready when the stream gets there (cudaStreamSynchronize, or
 * rfa_context_synchronize()). Transports that cannot be ordered on a stream (MPI) wait for
 * the stream's queued work inside the call. A context may move to another stream between
 * calls without a synchronization: the new stream waits, on the device, for the work the
 * context queued on the previous one (which may be destroyed once the caller no longer needs
 * it). Where the end of the context's last call could not be recorded on its stream (a CUDA
 * event that failed), the switch waits for the whole device instead, with no deadline.
 * @param context a live context.
 * @param cuda_stream a cudaStream_t, or NULL.
 * @return ::RFA_SUCCESS; ::RFA_ERROR_INVALID_ARGUMENT for a NULL context;
 *         ::RFA_ERROR_INVALID_USAGE for a host context or an unusable one (after
 *         ::RFA_ERROR_TIMEOUT or ::RFA_ERROR_CALL_MISMATCH: the new stream would wait for work
 *         that may never end), and in a child of fork(); ::RFA_ERROR_CUDA where CUDA refuses
 *         to order the new stream after the previous one.
 */
RFA_API rfa_result_t rfa_context_set_stream(rfa_context_t context, void* cuda_stream);

/**
 * @brief Waits until the device work rfa queued on the context's stream is done.
 *
 * Not collective. Does nothing for a host context (host calls finish before they return). Waits
 * at most the context's deadline (options.timeout_s).
 * @param context a live context.
 * @return ::RFA_SUCCESS; ::RFA_ERROR_INVALID_ARGUMENT for a NULL context; ::RFA_ERROR_CUDA
 *         when the stream reports an error (a kernel failed); ::RFA_ERROR_TIMEOUT when the
 *         stream's work has not completed by the deadline (a kernel that never ends: the
 *         context is unusable from then on, as after any timeout); ::RFA_ERROR_INVALID_USAGE,
 *         at once, for a context already unusable, and in a child of fork() (host contexts
 *         too).
 */
RFA_API rfa_result_t rfa_context_synchronize(rfa_context_t context);

/**
 * @brief Frees the workspace the context keeps between calls.
 *
 * Not collective. Once a context has run a forward and a backward, it keeps their buffers
 * between calls (a ::RFA_DEVICE_HOST context one block of host memory as large as the larger
 * call's, a ::RFA_DEVICE_CUDA one each device buffer as large as it has needed), so that later
 * calls neither allocate nor touch fresh pages (docs/memory.md gives the sizes). This gives
 * them back, for a code that needs the memory between calls; the next calls allocate them
 * again. A ::RFA_DEVICE_CUDA context first waits for its stream, whose queued kernels may
 * still use them, at most the context's deadline (options.timeout_s).
 * @param context a live context.
 * @param[out] released_bytes receives the bytes freed (0 when nothing was kept); may be NULL.
 * @return ::RFA_SUCCESS; ::RFA_ERROR_INVALID_ARGUMENT for a NULL context; ::RFA_ERROR_CUDA
 *         when the stream reports an error (a kernel failed); ::RFA_ERROR_TIMEOUT when the
 *         stream's work has not completed by the deadline (nothing is freed; the context is
 *         unusable from then on); ::RFA_ERROR_INVALID_USAGE, at once, for a context already
 *         unusable (nothing is freed: after a timeout abandoned transfers may still write it),
 *         and in a child of fork() (host contexts too: the memory is the parent's).
 */
RFA_API rfa_result_t rfa_context_release_workspace(rfa_context_t context, int64_t* released_bytes);

/** @} */

/* ------------------------------------------------------------------------------------------ */
/** @name Attention
 *
 * Tensors are this rank's shards, row-major (docs/architecture.md §2), in host memory for a
 * ::RFA_DEVICE_HOST context and in device memory of the context's GPU for a ::RFA_DEVICE_CUDA
 * one (checked with cudaPointerGetAttributes: a pointer to the wrong kind of memory fails with
 * ::RFA_ERROR_INVALID_ARGUMENT on every rank before any data moves, as does a tensor not aligned
 * to its elements (4 bytes for fp32 and lse, 2 for bf16 and fp16), or on a CUDA context to 16
 * bytes (sinks and dsinks: 4); that GPU, current at rfa_context_create(), must be current
 * during each call, else ::RFA_ERROR_INVALID_USAGE),
 * in the context's dtype (fp32: float; bf16, fp16: 16-bit patterns in uint16_t). With L the
 * local sequence:
 * q, dq are [B][L][H][d]; k, dk are [B][L][Hkv][d]; out, dout are [B][L][H][dv] and v, dv
 * [B][L][Hkv][dv], with dv the options' value_head_dim (d, head_dim, unless set); lse is fp32
 * [B][H][L] (natural log). A Fortran array q(d, H, L, B) has this memory layout.
 *
 * Aliasing: read-only inputs may alias each other (q == k is fine). An output must not
 * overlap any other argument; this is checked, and overlapping buffers fail with
 * ::RFA_ERROR_INVALID_ARGUMENT.
 *
 * Errors: local problems (a NULL pointer, overlapping buffers) are agreed over the ring before
 * any data moves, so every rank returns an error together: the rank with the problem gets its
 * code and message, the others the same code naming the lowest failing ring position. What a
 * rank refuses before it can reach the agreement is the exception: a NULL, destroyed or
 * never-created context (no ring to agree over), a context already unusable on that rank, a
 * call in a child of fork(), after MPI_Finalize, or one MPI's thread level forbids. That rank
 * returns at once, and the other ranks wait for it until the deadline
 * (::RFA_ERROR_TIMEOUT); pass a valid context on every rank.
 *
 * Matching: the same agreement compares what the ranks call. Every collective call on a
 * context (rfa_forward(), rfa_backward(), rfa_allgather_bshd(), rfa_context_destroy()) carries
 * its operation and its number among the context's collective calls; ranks in different calls
 * (one in rfa_forward() while another is in rfa_backward(), or one call more on one rank) all
 * fail with ::RFA_ERROR_CALL_MISMATCH naming what each side called, before any data moves and
 * without writing an output, and the context is unusable from then on. The messages of a call
 * travel under tags of their own (MPI) or on the context's own communicator (NCCL), so nothing
 * of one call or context is received by another. Ranks that wait in different contexts (two
 * contexts called in different orders) cannot meet in an agreement: they end by the deadline
 * with ::RFA_ERROR_TIMEOUT. A failure that leaves the ranks out of step (a timeout, a call
 * mismatch, an error raised on one rank alone after the ranks agreed to run the call, a failure
 * of MPI or NCCL, a failure after which an exchange gave up transfers) makes the context
 * unusable on that rank: every later call but rfa_context_destroy(), the queries
 * (rfa_context_get_*) and the local sharding helpers (rfa_scatter_*, rfa_gather_*) is refused
 * with ::RFA_ERROR_INVALID_USAGE saying why: the collective calls, and rfa_context_set_stream(),
 * rfa_context_synchronize() and rfa_context_release_workspace(), which would wait again for
 * device work that may never end.
 *
 * Collective calls after MPI_Finalize (or before MPI_Init) return ::RFA_ERROR_INVALID_USAGE
 * instead of calling MPI.
 * @{ */

/**
 * @brief Exact attention over the whole sequence for this rank's queries.
 *
 * Collective over the context's ranks: every rank calls it with its own shards.
 * @param context a live context.
 * @param q [B][L][H][d] queries.
 * @param k [B][L][Hkv][d] keys.
 * @param v [B][L][Hkv][dv] values (dv: the options' value_head_dim).
 * @param[out] out [B][L][H][dv] attention output; a query row that sees no key gets 0.
 * @param[out] lse [B][H][L] fp32 log-sum-exp of each query row (-inf if it sees no key);
 *             rfa_backward() needs it.
 * @return ::RFA_SUCCESS; ::RFA_ERROR_INVALID_ARGUMENT (NULL pointer, overlapping outputs, a
 *         tensor not aligned to its elements; on a CUDA context, memory not of its device or
 *         not 16-byte aligned);
 *         ::RFA_ERROR_INVALID_USAGE (a context created with attention sinks, which takes the
 *         _with_sinks call, checked after the arguments; an unusable context; another current
 *         CUDA device; MPI finalized);
 *         ::RFA_ERROR_CALL_MISMATCH; ::RFA_ERROR_NONFINITE (options.check_values);
 *         ::RFA_ERROR_TIMEOUT; ::RFA_ERROR_MPI; ::RFA_ERROR_OUT_OF_MEMORY; ::RFA_ERROR_CUDA and
 *         ::RFA_ERROR_NCCL (CUDA contexts).
 */
RFA_API rfa_result_t rfa_forward(rfa_context_t context, const void* q, const void* k, const void* v, void* out,
                                 float* lse);

/**
 * @brief Gradients of the loss with respect to q, k and v, given dout = dLoss/dout.
 *
 * Collective over the context's ranks. @p out and @p lse are rfa_forward()'s results for the
 * same q, k, v. Every gradient is accumulated in fp32 and written once, in the context's dtype.
 * @param context a live context.
 * @param q [B][L][H][d] queries.
 * @param k [B][L][Hkv][d] keys.
 * @param v [B][L][Hkv][dv] values (dv: the options' value_head_dim).
 * @param out [B][L][H][dv] the forward's output.
 * @param dout [B][L][H][dv] gradient of the loss with respect to out.
 * @param lse [B][H][L] the forward's log-sum-exp.
 * @param[out] dq [B][L][H][d] gradient with respect to q.
 * @param[out] dk [B][L][Hkv][d] gradient with respect to k.
 * @param[out] dv [B][L][Hkv][dv] gradient with respect to v.
 * @return ::RFA_SUCCESS; ::RFA_ERROR_INVALID_ARGUMENT (NULL pointer, overlapping outputs, a
 *         tensor not aligned to its elements; on a CUDA context, memory not of its device or
 *         not 16-byte aligned);
 *         ::RFA_ERROR_INVALID_USAGE (a context created with attention sinks, which takes the
 *         _with_sinks call, checked after the arguments; an unusable context; another current
 *         CUDA device; MPI finalized);
 *         ::RFA_ERROR_CALL_MISMATCH; ::RFA_ERROR_NONFINITE (options.check_values);
 *         ::RFA_ERROR_TIMEOUT; ::RFA_ERROR_MPI; ::RFA_ERROR_OUT_OF_MEMORY; ::RFA_ERROR_CUDA and
 *         ::RFA_ERROR_NCCL (CUDA contexts).
 */
RFA_API rfa_result_t rfa_backward(rfa_context_t context, const void* q, const void* k, const void* v, const void* out,
                                  const void* dout, const float* lse, void* dq, void* dk, void* dv);

/**
 * @brief rfa_forward() with attention sinks: each query head h has a logit @p sinks[h] that joins
 *        every row's softmax denominator once, with no value of its own.
 *
 * For a row of head h with visible scores s_j (scaled, as the softmax sees them):
 * out = sum_j exp(s_j - lse) v_j with lse = log(exp(sinks[h]) + sum_j exp(s_j)). The sink is
 * added once, to the finished rows, whatever the strategy, layout or number of ranks; a sink of
 * -inf is no sink. Collective over the context's ranks, on a context created with
 * options.attention_sinks set. On a CUDA context it first waits for the work already queued on
 * the context's stream (the sinks are read to the host, where the ranks agree on them); its own
 * results, as rfa_forward()'s, are ready when the stream gets there.
 * @param context a live context created with attention_sinks nonzero.
 * @param q [B][L][H][d] queries.
 * @param k [B][L][Hkv][d] keys.
 * @param v [B][L][Hkv][dv] values (dv: the options' value_head_dim).
 * @param sinks [H] fp32 sink logits, the same on every rank (checked: a hash of the values is
 *        agreed before any data moves), none NaN or +inf; in the context's memory (device
 *        memory for a CUDA context).
 * @param[out] out [B][L][H][dv] attention output; a row that sees no key gets 0.
 * @param[out] lse [B][H][L] fp32 log-sum-exp of each row, the sink included (what
 *             rfa_backward_with_sinks() needs); to merge the rows with other attention, use it as
 *             the log of the whole denominator.
 * @return the codes of rfa_forward() (but for its refusal of a context with sinks);
 *         ::RFA_ERROR_INVALID_USAGE on a context without sinks (checked after the arguments:
 *         a NULL or misplaced buffer is ::RFA_ERROR_INVALID_ARGUMENT first) or when the ranks'
 *         sinks differ; ::RFA_ERROR_INVALID_ARGUMENT for a NULL, NaN or +inf sink.
 *         For 16-bit dtypes, out is rounded twice (by the strategy, then once more after the
 *         sink's rescaling).
 */
RFA_API rfa_result_t rfa_forward_with_sinks(rfa_context_t context, const void* q, const void* k, const void* v,
                                            const float* sinks, void* out, float* lse);

/**
 * @brief rfa_backward() with attention sinks: the gradients of q, k and v, and of the sinks.
 *
 * @p out and @p lse are rfa_forward_with_sinks()'s results for the same inputs and sinks.
 * Collective over the context's ranks, on a context created with options.attention_sinks set.
 * On a CUDA context it returns once the whole backward is done on the context's stream: the
 * sinks' gradient is summed over the ranks on the host.
 * @param context a live context created with attention_sinks nonzero.
 * @param q [B][L][H][d] queries.
 * @param k [B][L][Hkv][d] keys.
 * @param v [B][L][Hkv][dv] values (dv: the options' value_head_dim).
 * @param out [B][L][H][dv] the forward's output.
 * @param dout [B][L][H][dv] gradient of the loss with respect to out.
 * @param lse [B][H][L] the forward's log-sum-exp (the sink included).
 * @param sinks [H] the forward's sink logits (the same on every rank, checked as there).
 * @param[out] dq [B][L][H][d] gradient with respect to q.
 * @param[out] dk [B][L][Hkv][d] gradient with respect to k.
 * @param[out] dv [B][L][Hkv][dv] gradient with respect to v.
 * @param[out] dsinks [H] fp32 gradient with respect to the sinks: -sum over every row of every
 *             rank and batch entry of exp(sinks[h] - lse) * sum_d dout * out, summed in float64 in
 *             ring-position order, bitwise the same on every rank; in the context's memory.
 * @return the codes of rfa_backward() (but for its refusal of a context with sinks);
 *         ::RFA_ERROR_INVALID_USAGE on a context without sinks (checked after the arguments:
 *         a NULL or misplaced buffer is ::RFA_ERROR_INVALID_ARGUMENT first) or when the ranks'
 *         sinks differ; ::RFA_ERROR_INVALID_ARGUMENT for a NULL, NaN or +inf sink.
 */
RFA_API rfa_result_t rfa_backward_with_sinks(rfa_context_t context, const void* q, const void* k, const void* v,
                                             const void* out, const void* dout, const float* lse, const float* sinks,
                                             void* dq, void* dk, void* dv, float* dsinks);

/** @} */

/* ------------------------------------------------------------------------------------------ */
/** @name Masks as ranges
 *
 * Builders of the common masks as lists of ::rfa_mask_range_t for ::RFA_MASK_RANGES
 * (docs/masks.md). Each writes at most @p capacity entries to @p ranges and sets @p *count to
 * the number the mask needs; call it with ranges NULL and capacity 0 to learn the count, then
 * again with room for it. Lists can be joined: the mask is the union of the entries. Not
 * collective; thread-safe; no context needed.
 *
 * Each returns ::RFA_SUCCESS, or ::RFA_ERROR_INVALID_ARGUMENT for a NULL @p count, a negative
 * capacity, a NULL @p ranges with a capacity above 0, a non-NULL @p ranges whose capacity is
 * below the count (nothing is written to @p ranges then; @p *count says how many it needs),
 * a @p count that points into @p ranges' room or into an input array (nothing written),
 * sizes out of range (named in the message), or a mask that needs more than 2^26 entries.
 * The list is built before it is written, so an input array may share memory with @p ranges.
 * @{ */

/**
 * @brief The causal mask over a sequence of @p seq_total tokens: one ::RFA_RANGE_CAUSAL entry.
 * @param seq_total the whole sequence's length S >= 1.
 * @param[out] ranges room for @p capacity entries, or NULL.
 * @param capacity entries @p ranges can hold (>= 0).
 * @param[out] count the entries the mask needs.
 * @return ::RFA_SUCCESS or ::RFA_ERROR_INVALID_ARGUMENT (see the group's description).
 */
RFA_API rfa_result_t rfa_mask_ranges_causal(int64_t seq_total, rfa_mask_range_t* ranges, int64_t capacity,
                                            int64_t* count);

/**
 * @brief A sliding window: a key is visible when q - k < @p window, and with @p causal only if
 *        also k <= q (the same pairs as rfa_options_t::window with or without ::RFA_MASK_CAUSAL):
 *        one ::RFA_RANGE_BAND entry.
 * @param seq_total the whole sequence's length S >= 1 (from 2^61 on the band's offsets may
 *        reach the +-2^61 a context takes: rfa_context_create() refuses such a list).
 * @param window the window w >= 1.
 * @param causal nonzero: no key after its query.
 * @param[out] ranges room for @p capacity entries, or NULL.
 * @param capacity entries @p ranges can hold (>= 0).
 * @param[out] count the entries the mask needs.
 * @return ::RFA_SUCCESS or ::RFA_ERROR_INVALID_ARGUMENT (see the group's description).
 */
RFA_API rfa_result_t rfa_mask_ranges_sliding_window(int64_t seq_total, int64_t window, int32_t causal,
                                                    rfa_mask_range_t* ranges, int64_t capacity, int64_t* count);

/**
 * @brief Packed documents: keys visible only within their query's document (causally with
 *        @p causal), the same pairs as rfa_options_t::doc_boundaries: one entry per non-empty
 *        document.
 * @param doc_boundaries @p boundary_count cumulative boundaries 0 = b[0] <= ... <= b[n] (as
 *        rfa_options_t::doc_boundaries; the last is the sequence's length, >= 1: the builder
 *        cannot check it against a context's seq_total, and rows at or past b[n] would see no
 *        key).
 * @param boundary_count documents + 1, >= 2.
 * @param causal nonzero: causal within each document.
 * @param[out] ranges room for @p capacity entries, or NULL.
 * @param capacity entries @p ranges can hold (>= 0).
 * @param[out] count the entries the mask needs.
 * @return ::RFA_SUCCESS or ::RFA_ERROR_INVALID_ARGUMENT (see the group's description).
 */
RFA_API rfa_result_t rfa_mask_ranges_documents(const int64_t* doc_boundaries, int64_t boundary_count, int32_t causal,
                                               rfa_mask_range_t* ranges, int64_t capacity, int64_t* count);

/**
 * @brief A prefix-LM mask: the first @p prefix tokens see each other both ways, and every
 *        later token sees the whole prefix and, causally, the tokens after it: two entries
 *        (one, the causal mask, with @p prefix 0).
 * @param seq_total the whole sequence's length S >= 1.
 * @param prefix the prefix's length, 0 <= prefix <= S (0: the causal mask).
 * @param[out] ranges room for @p capacity entries, or NULL.
 * @param capacity entries @p ranges can hold (>= 0).
 * @param[out] count the entries the mask needs.
 * @return ::RFA_SUCCESS or ::RFA_ERROR_INVALID_ARGUMENT (see the group's description).
 */
RFA_API rfa_result_t rfa_mask_ranges_prefix_lm(int64_t seq_total, int64_t prefix, rfa_mask_range_t* ranges,
                                               int64_t capacity, int64_t* count);

/**
 * @brief A block-causal mask (video frames, chunked prompts): tokens in blocks of @p block
 *        (the last may be shorter) see every token of their own block and of the blocks before:
 *        one entry per block.
 * @param seq_total the whole sequence's length S >= 1.
 * @param block the block's length >= 1.
 * @param[out] ranges room for @p capacity entries, or NULL.
 * @param capacity entries @p ranges can hold (>= 0).
 * @param[out] count the entries the mask needs.
 * @return ::RFA_SUCCESS or ::RFA_ERROR_INVALID_ARGUMENT (see the group's description).
 */
RFA_API rfa_result_t rfa_mask_ranges_block_causal(int64_t seq_total, int64_t block, rfa_mask_range_t* ranges,
                                                  int64_t capacity, int64_t* count);

/**
 * @brief The neighbourhood of radius @p radius on an nx x ny x nz grid whose points are tokens
 *        in row-major order (token (x, y, z) at position x + nx * (y + ny * z); nz = 1 for a
 *        2-D grid): a point sees the points with |dx|, |dy| and |dz| all <= radius (a square or
 *        cube around it, cut at the grid's edges). One ::RFA_RANGE_BAND entry per pair of grid
 *        rows (fixed y and z) that see each other: up to ny * nz * (2 radius + 1)^2 (2-D: ny *
 *        (2 radius + 1)).
 * @param nx points along x (the fastest index), >= 1.
 * @param ny points along y, >= 1.
 * @param nz points along z, >= 1 (1: a 2-D grid).
 * @param radius the neighbourhood's radius >= 0 (0: each point sees itself).
 * @param[out] ranges room for @p capacity entries, or NULL.
 * @param capacity entries @p ranges can hold (>= 0).
 * @param[out] count the entries the mask needs.
 * @return ::RFA_SUCCESS or ::RFA_ERROR_INVALID_ARGUMENT (see the group's description).
 */
RFA_API rfa_result_t rfa_mask_ranges_grid_neighbourhood(int64_t nx, int64_t ny, int64_t nz, int64_t radius,
                                                        rfa_mask_range_t* ranges, int64_t capacity, int64_t* count);

/** @} */

/* ------------------------------------------------------------------------------------------ */
/** @name Sharding helpers
 *
 * Copies between a whole-sequence tensor and this rank's shard, for setting up inputs and
 * checking results (not a hot path). A bshd tensor with `heads` heads is [B][S][heads][d]
 * globally and [B][L][heads][d] locally, in the context's dtype; pass the options' heads for
 * q-shaped tensors and kv_heads for k/v-shaped ones. d is the options' head_dim, or for the
 * _dim forms the caller's head_dim (the options' value_head_dim for v, out, dout and dv where it
 * differs). An lse tensor is fp32 [B][H][S] / [B][H][L]. Copies are bitwise. Overlapping
 * buffers (by address) are refused with ::RFA_ERROR_INVALID_ARGUMENT (rfa_allgather_bshd() on
 * every rank; no in-place form). They are host memory, on a ::RFA_DEVICE_CUDA context too (rfa_allgather_bshd()
 * moves them over MPI there, not over the context's device transport): device memory is
 * refused with ::RFA_ERROR_INVALID_ARGUMENT naming the buffer. So are buffers not aligned to
 * their elements (4 bytes for fp32 and lse, 2 for bf16 and fp16) and sizes whose bytes do not
 * fit in int64, whatever each function's own list says.
 * @{ */

/**
 * @brief Copies this rank's rows out of a global bshd tensor: local[b][i] = global[b][positions[i]].
 *
 * Not collective.
 * @param context a live context.
 * @param heads the tensor's number of heads (>= 1).
 * @param global [B][S][heads][d] the whole tensor.
 * @param[out] local [B][L][heads][d] this rank's shard.
 * @return ::RFA_SUCCESS, or ::RFA_ERROR_INVALID_ARGUMENT (NULL pointer, heads < 1).
 */
RFA_API rfa_result_t rfa_scatter_bshd(rfa_context_t context, int64_t heads, const void* global, void* local);

/**
 * @brief rfa_scatter_bshd() for a tensor of head dim @p head_dim (V-shaped tensors of a context
 *        whose value_head_dim differs from head_dim).
 *
 * Not collective.
 * @param context a live context.
 * @param heads the tensor's number of heads (>= 1).
 * @param head_dim the tensor's head dim (>= 1).
 * @param global [B][S][heads][head_dim] the whole tensor.
 * @param[out] local [B][L][heads][head_dim] this rank's shard.
 * @return ::RFA_SUCCESS, or ::RFA_ERROR_INVALID_ARGUMENT (NULL pointer, heads or head_dim < 1).
 */
RFA_API rfa_result_t rfa_scatter_bshd_dim(rfa_context_t context, int64_t heads, int64_t head_dim, const void* global,
                                          void* local);

/**
 * @brief Copies this rank's rows into a global bshd tensor; rows other ranks hold are untouched.
 *
 * Not collective.
 * @param context a live context.
 * @param heads the tensor's number of heads (>= 1).
 * @param local [B][L][heads][d] this rank's shard.
 * @param[out] global [B][S][heads][d] the whole tensor.
 * @return ::RFA_SUCCESS, or ::RFA_ERROR_INVALID_ARGUMENT (NULL pointer, heads < 1).
 */
RFA_API rfa_result_t rfa_gather_bshd(rfa_context_t context, int64_t heads, const void* local, void* global);

/**
 * @brief rfa_gather_bshd() for a tensor of head dim @p head_dim.
 *
 * Not collective.
 * @param context a live context.
 * @param heads the tensor's number of heads (>= 1).
 * @param head_dim the tensor's head dim (>= 1).
 * @param local [B][L][heads][head_dim] this rank's shard.
 * @param[out] global [B][S][heads][head_dim] the whole tensor.
 * @return ::RFA_SUCCESS, or ::RFA_ERROR_INVALID_ARGUMENT (NULL pointer, heads or head_dim < 1).
 */
RFA_API rfa_result_t rfa_gather_bshd_dim(rfa_context_t context, int64_t heads, int64_t head_dim, const void* local,
                                         void* global);

/**
 * @brief Reassembles the whole bshd tensor on every rank from every rank's shard.
 *
 * Collective over the context's ranks; needs the whole tensor in memory on every rank twice:
 * `global`, and as much again where every rank's shard is staged during the call.
 * @param context a live context.
 * @param heads the tensor's number of heads (>= 1), the same on every rank.
 * @param local [B][L][heads][d] this rank's shard.
 * @param[out] global [B][S][heads][d] the whole tensor.
 * @return ::RFA_SUCCESS, ::RFA_ERROR_INVALID_ARGUMENT, ::RFA_ERROR_INVALID_USAGE (ranks passed
 *         different heads; an unusable context), ::RFA_ERROR_OUT_OF_MEMORY (on every rank,
 *         before anything moves, where some rank cannot stage the shards),
 *         ::RFA_ERROR_CALL_MISMATCH (ranks made different collective calls), ::RFA_ERROR_TIMEOUT,
 *         ::RFA_ERROR_MPI.
 */
RFA_API rfa_result_t rfa_allgather_bshd(rfa_context_t context, int64_t heads, const void* local, void* global);

/**
 * @brief rfa_allgather_bshd() for a tensor of head dim @p head_dim.
 *
 * Collective over the context's ranks (a call that matches rfa_allgather_bshd() on the others);
 * needs the whole tensor in memory on every rank twice, as rfa_allgather_bshd() does.
 * @param context a live context.
 * @param heads the tensor's number of heads (>= 1), the same on every rank.
 * @param head_dim the tensor's head dim (>= 1), the same on every rank.
 * @param local [B][L][heads][head_dim] this rank's shard.
 * @param[out] global [B][S][heads][head_dim] the whole tensor.
 * @return ::RFA_SUCCESS, ::RFA_ERROR_INVALID_ARGUMENT, ::RFA_ERROR_INVALID_USAGE (ranks passed
 *         different heads or head dims; an unusable context), ::RFA_ERROR_OUT_OF_MEMORY (as
 *         rfa_allgather_bshd()), ::RFA_ERROR_CALL_MISMATCH, ::RFA_ERROR_TIMEOUT, ::RFA_ERROR_MPI.
 */
RFA_API rfa_result_t rfa_allgather_bshd_dim(rfa_context_t context, int64_t heads, int64_t head_dim, const void* local,
                                            void* global);

/**
 * @brief Copies this rank's columns out of a global fp32 lse tensor [B][H][S] into [B][H][L].
 *
 * Not collective.
 * @param context a live context.
 * @param global [B][H][S] the whole tensor.
 * @param[out] local [B][H][L] this rank's shard.
 * @return ::RFA_SUCCESS, or ::RFA_ERROR_INVALID_ARGUMENT for a NULL pointer.
 */
RFA_API rfa_result_t rfa_scatter_lse(rfa_context_t context, const float* global, float* local);

/**
 * @brief Copies this rank's columns into a global fp32 lse tensor; other columns are untouched.
 *
 * Not collective.
 * @param context a live context.
 * @param local [B][H][L] this rank's shard.
 * @param[out] global [B][H][S] the whole tensor.
 * @return ::RFA_SUCCESS, or ::RFA_ERROR_INVALID_ARGUMENT for a NULL pointer.
 */
RFA_API rfa_result_t rfa_gather_lse(rfa_context_t context, const float* local, float* global);

/**
 * @brief The number of tokens each rank holds for a layout, without a context.
 *
 * Not collective; thread-safe.
 * @param layout the layout.
 * @param seq_total the whole sequence length S.
 * @param ranks the number of ranks P.
 * @param[out] local_seq receives L = S / P.
 * @return ::RFA_SUCCESS, or ::RFA_ERROR_INVALID_ARGUMENT (NULL pointer, unknown layout, S or P
 *         below 1, S not divisible as the layout needs).
 */
RFA_API rfa_result_t rfa_layout_local_seq(rfa_layout_t layout, int64_t seq_total, int ranks, int64_t* local_seq);

/**
 * @brief The global token positions ring position @p position holds, without a context.
 *
 * Not collective; thread-safe.
 * @param layout the layout.
 * @param seq_total the whole sequence length S.
 * @param ranks the number of ranks P.
 * @param position the ring position, 0..P-1.
 * @param[out] positions an array of at least L = S / P elements; receives them in local row order.
 * @param capacity the number of elements of @p positions.
 * @return ::RFA_SUCCESS, or ::RFA_ERROR_INVALID_ARGUMENT (as rfa_layout_local_seq(), a
 *         position outside 0..P-1, a capacity below L, ::RFA_LAYOUT_BALANCED: its positions
 *         depend on the mask, so only a context knows them, rfa_context_get_local_positions()).
 */
RFA_API rfa_result_t rfa_layout_positions(rfa_layout_t layout, int64_t seq_total, int ranks, int position,
                                          int64_t* positions, int64_t capacity);

/** @} */

/* ------------------------------------------------------------------------------------------ */
/** @name Library lifetime
 * @{ */

/**
 * @brief Finalizes what rfa initialized on its own: Kokkos, when rfa initialized it.
 *
 * rfa initializes Kokkos at the first rfa_context_create() if the application has not, and
 * then owns it. Kokkos cannot be initialized again once finalized, so rfa never finalizes it
 * behind the application's back while it might still be needed: it does so here, or, if this
 * is never called, at program exit. After rfa_finalize() has finalized Kokkos, rfa_context_create()
 * fails with ::RFA_ERROR_INVALID_USAGE. If the application initialized Kokkos, it stays the
 * application's: rfa never finalizes it, and the application must destroy every context before
 * calling Kokkos::finalize(). Calling rfa_finalize() again, or when rfa owns nothing, succeeds
 * and does nothing; so does it in a child of fork() (the Kokkos, and any device state, are the
 * parent's), where program exit leaves Kokkos alone too. MPI is never initialized nor
 * finalized by rfa.
 *
 * Not collective. Must not run concurrently with any other rfa call.
 * @return ::RFA_SUCCESS, or ::RFA_ERROR_INVALID_USAGE if rfa owns Kokkos and contexts are still
 *         alive (where the application owns Kokkos, or nothing was created, there is nothing
 *         to finalize and it succeeds).
 */
RFA_API rfa_result_t rfa_finalize(void);

/** @} */

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* RFA_H */
