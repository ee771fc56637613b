/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file rfa_mpi.h
 * @brief The entry points of rfa that take an MPI communicator.
 *
 * Kept apart from rfa.h so that code which only handles contexts needs no mpi.h. rfa never
 * calls MPI_Init or MPI_Finalize: MPI must be initialized by the application before these
 * calls, and contexts must be destroyed before MPI_Finalize.
 */
#ifndef RFA_MPI_H
#define RFA_MPI_H

#include <mpi.h>

#include "rfa/rfa.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * @brief Creates a ring over the ranks of @p comm.
 *
 * Collective over @p comm: every rank calls it with the same options. In order, it
 * 1. checks this rank's arguments and, if the application has not, initializes Kokkos
 *    (see rfa_finalize());
 * 2. compares every rank's options in one small collective: if ranks disagree, every rank
 *    returns ::RFA_ERROR_INVALID_USAGE with a message naming the first field that differs
 *    and the ranks (of @p comm) whose value differs from the lowest rank's; if one rank's
 *    arguments are invalid, every rank fails (that rank with its own code and message, the
 *    others with the same code naming it);
 * 3. validates the shapes (the same verdict on every rank);
 * 4. chooses the ring order (options->ring_order, environment RFA_RING_ORDER and
 *    RFA_TOPO_DUMP) and splits a private communicator whose rank is the ring position.
 * No rank hangs when another fails, as long as every rank makes the call over the same
 * communicator: a rank whose @p comm is MPI_COMM_NULL fails at once, before any collective,
 * and the others, who cannot hear from it, end by the deadline with ::RFA_ERROR_TIMEOUT.
 * Every collective of
 * the creation ends by the deadline (options->timeout_s, else RFA_TIMEOUT_S or 600 s): a rank
 * that arrives after the others gave up fails with ::RFA_ERROR_TIMEOUT too. After a creation
 * timeout the ranks' collectives on @p comm are out of step (MPI cannot cancel a collective):
 * use it for nothing collective afterwards; the job should end.
 *
 * Thread safety: MPI's thread level is held (rfa_context_t: a call it forbids is refused on
 * its rank before any MPI call); @p comm is only used during this call (the context keeps its
 * own duplicate). Creations (and destructions) over the same
 * @p comm must come from one thread at a time, in the same order on every rank: two threads
 * creating over one communicator at once may pair one rank's first context with another's
 * second. Contexts meant for concurrent use are best created over duplicates of it.
 *
 * @param comm the ranks of the ring: an intracommunicator, not MPI_COMM_NULL.
 * @param options filled by rfa_options_init(), then adjusted; read, not kept.
 * @param[out] context receives the new handle, or NULL on failure.
 * @return ::RFA_SUCCESS;
 *         ::RFA_ERROR_INVALID_ARGUMENT (NULL pointer, MPI_COMM_NULL or an intercommunicator,
 *         a struct_size too small, above 4096 or inside a field, a version below 1, a list
 *         given with a count of 0 or refused by its own rules (documents, mask ranges; ranges
 *         with a mask other than ::RFA_MASK_RANGES), unknown enum value, sizes below 1, heads
 *         not a multiple of kv_heads, sequence not divisible as the layout needs, a ulysses_degree
 *         the strategy does not take, a timeout_s, softmax_scale or softcap that is not finite,
 *         tensors whose sizes overflow int64, a malformed RFA_* environment variable (its
 *         name and value in the message: docs/environment.md));
 *         ::RFA_ERROR_UNSUPPORTED (a head dim, dtype or layout the device's kernels do not take;
 *         a CUDA context from a build without CUDA; ::RFA_STRATEGY_NEEDED on a CUDA context;
 *         cuda_kernels ::RFA_CUDA_KERNELS_CUDNN on a host
 *         context, or where cuDNN cannot run the strategy or is not found; transport
 *         ::RFA_TRANSPORT_NCCL (in the options or RFA_TRANSPORT) on a host context, in a build
 *         without NCCL, or with ranks sharing a GPU; a shape past what the build's Kokkos Views
 *         index; a soft cap the CUDA kernels cannot hold
 *         in fp32; a field a newer rfa.h appends, set, that this library lacks; a rank's
 *         CPU lacks an instruction set the library was compiled for: that rank's creation
 *         still tells the others, which fail at once naming it and what it lacks, where the
 *         program calls it there despite rfa_options_init()'s refusal);
 *         ::RFA_ERROR_INVALID_USAGE (MPI not initialized or already finalized, ranks disagree,
 *         Kokkos already finalized, a call MPI's thread level forbids, a rank that keeps
 *         RFA_MAX_KEPT_COMMUNICATORS communicators of timed-out calls, a CUDA context whose
 *         current device is not the one Kokkos was initialized on);
 *         ::RFA_ERROR_TIMEOUT (not every rank arrived in time);
 *         ::RFA_ERROR_VERSION_MISMATCH (the MPI this process calls is of another family than
 *         the one librfa was built with, Open MPI or MPICH and the MPIs on its ABI: asked with
 *         MPI_Get_library_version before any other MPI call, the same answer on every rank);
 *         ::RFA_ERROR_KOKKOS, ::RFA_ERROR_MPI, ::RFA_ERROR_HWLOC, ::RFA_ERROR_OUT_OF_MEMORY;
 *         ::RFA_ERROR_CUDA and ::RFA_ERROR_NCCL (CUDA contexts: the device, its transport; and
 *         any context where rfa initializes a CUDA-enabled Kokkos on a rank with no usable GPU).
 */
RFA_API rfa_result_t rfa_context_create(MPI_Comm comm, const rfa_options_t* options, rfa_context_t* context);

/**
 * @brief rfa_context_create() for a Fortran communicator handle (MPI_Fint, as in `integer`
 *        communicators and <tt>comm\%MPI_VAL</tt> of <tt>type(MPI_Comm)</tt>).
 *
 * Collective over the communicator; converts it with MPI_Comm_f2c (which needs MPI to be
 * initialized: otherwise ::RFA_ERROR_INVALID_USAGE) and behaves as rfa_context_create(). Where
 * MPI's handles are pointers (Open MPI), an integer that names no communicator fails on its
 * rank with ::RFA_ERROR_INVALID_ARGUMENT, as MPI_COMM_NULL does; where they are integers
 * (MPICH and its kin) MPI cannot tell such an integer from a handle, and its own check of the
 * communicator (fatal by default) decides.
 * @param comm the Fortran handle of the communicator.
 * @param options as for rfa_context_create().
 * @param[out] context as for rfa_context_create().
 * @return as rfa_context_create().
 */
RFA_API rfa_result_t rfa_context_create_fint(MPI_Fint comm, const rfa_options_t* options, rfa_context_t* context);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* RFA_MPI_H */
