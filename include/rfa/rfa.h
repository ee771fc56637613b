/**
 * @file rfa.h
 * @brief The C interface of rfa, ring (context-parallel) flash attention.
 *
 * Pure C99: no C++, Kokkos, CUDA or MPI type appears here. Entry points that take an MPI
 * communicator are declared in rfa_mpi.h.
 *
 * Conventions shared by every function:
 * - Every function returns an ::rfa_result_t; ::RFA_SUCCESS is 0. On failure,
 *   rfa_get_last_error_message() gives a detailed message for the calling thread.
 * - No C++ exception ever crosses this interface.
 * - Thread safety: different handles may be used from different threads at once; calls on
 *   one handle must be serialized by the caller. The error-query functions are thread-safe.
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
  RFA_ERROR_UNSUPPORTED = 3,       /**< Valid, but not supported by this build (head dim, dtype, backend). */
  RFA_ERROR_OUT_OF_MEMORY = 4,     /**< An allocation failed. */
  RFA_ERROR_INTERNAL = 5,          /**< A bug in rfa: please report it with the message. */
  RFA_ERROR_MPI = 6,               /**< An MPI call failed. */
  RFA_ERROR_NCCL = 7,              /**< An NCCL call failed or NCCL reported an asynchronous error. */
  RFA_ERROR_CUDA = 8,              /**< A CUDA runtime call or kernel launch failed. */
  RFA_ERROR_HWLOC = 9,             /**< hwloc could not load or query the topology. */
  RFA_ERROR_KOKKOS = 10,           /**< Kokkos failed to initialize or to allocate. */
  RFA_ERROR_VERSION_MISMATCH = 11, /**< The header and the library have different major versions. */
  RFA_ERROR_TIMEOUT = 12           /**< A communication did not complete in time and was aborted. */
} rfa_result_t;

/** @brief Storage data types of Q, K, V, the output and the gradients. Accumulation is always fp32. */
typedef enum rfa_dtype_t {
  RFA_DTYPE_FLOAT32 = 0,  /**< IEEE binary32. */
  RFA_DTYPE_BFLOAT16 = 1, /**< bfloat16 (8-bit exponent, 7-bit mantissa). */
  RFA_DTYPE_FLOAT16 = 2   /**< IEEE binary16. */
} rfa_dtype_t;

/** @brief Attention masks, applied on global token positions. */
typedef enum rfa_mask_t {
  RFA_MASK_NONE = 0,  /**< Every query sees every key. */
  RFA_MASK_CAUSAL = 1 /**< A query at position i sees keys at positions j <= i. */
} rfa_mask_t;

/**
 * @brief How the global sequence is split over the P ranks of the ring (DESIGN.md §4).
 *
 * The ring position r (0..P-1) decides which tokens a rank holds.
 */
typedef enum rfa_layout_t {
  RFA_LAYOUT_CONTIGUOUS = 0, /**< Rank r holds chunk r of P equal chunks (S % P == 0). */
  RFA_LAYOUT_ZIGZAG = 1,     /**< S cut into 2P chunks; rank r holds chunks r and 2P-1-r (S % 2P == 0). */
  RFA_LAYOUT_STRIPE = 2      /**< Token t lives on rank t mod P (S % P == 0). */
} rfa_layout_t;

/** @brief How ranks are placed on the ring. */
typedef enum rfa_ring_order_t {
  RFA_RING_ORDER_DEFAULT = 0,  /**< Take RFA_RING_ORDER from the environment, else topology order. */
  RFA_RING_ORDER_IDENTITY = 1, /**< Ring position = rank in the communicator. */
  RFA_RING_ORDER_TOPOLOGY = 2, /**< Order from the hardware topology (hwloc, host, PCI). */
  RFA_RING_ORDER_FILE = 3      /**< Order read from a file (RFA_RING_ORDER=file:PATH). */
} rfa_ring_order_t;

/**
 * @brief The static text for a result code.
 * @param code any value; unknown values give "unknown rfa result code".
 * @return a string that lives forever; never NULL.
 */
RFA_API const char* rfa_get_error_string(rfa_result_t code);

/**
 * @brief The detailed message of the last failed rfa call on the calling thread.
 * @return a thread-local string, valid until the next rfa call on this thread; "" if none.
 */
RFA_API const char* rfa_get_last_error_message(void);

/**
 * @brief The version of the linked library.
 * @param[out] major,minor,patch may each be NULL.
 * @return ::RFA_SUCCESS.
 */
RFA_API rfa_result_t rfa_get_version(int* major, int* minor, int* patch);

/**
 * @brief Checks that the library's major version matches the header's.
 * @param header_major pass ::RFA_VERSION_MAJOR; the macro rfa_check_version() does so.
 * @return ::RFA_SUCCESS, or ::RFA_ERROR_VERSION_MISMATCH with a message naming both versions.
 */
RFA_API rfa_result_t rfa_check_version_major(int header_major);

/** @brief Checks the linked library against the header this file was compiled with. */
#define rfa_check_version() rfa_check_version_major(RFA_VERSION_MAJOR)

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* RFA_H */
