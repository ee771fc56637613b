! SPDX-License-Identifier: BSD-3-Clause
! A destroy that MPI's thread level refuses leaves the Fortran handle as it was, to be destroyed
! in turn (rfa_context_destroy in C keeps the context then): MPI initialized at
! MPI_THREAD_FUNNELED, the destroy called from a second OpenMP thread, then from the main one.
! Exit status 0 when every check holds on every rank, 77 (skipped) where MPI gives another
! thread level or OpenMP no second thread.
program destroy_refused_test
  use, intrinsic :: iso_c_binding
  use mpi_f08
  use omp_lib
  use rfa
  implicit none
  integer :: provided, rank, nranks, status, threads, failures, total_failures, skip, any_skip
  character(len=512) :: refusal
  integer(c_int64_t) :: L
  type(rfa_options) :: o
  type(rfa_context) :: ctx

  call MPI_Init_thread(MPI_THREAD_FUNNELED, provided)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks)
  failures = 0
  call check(rfa_options_init(o) == RFA_SUCCESS, "rfa_options_init")
  o%dtype = RFA_DTYPE_FLOAT32
  o%seq_total = 8 * nranks
  o%heads = 2
  o%kv_heads = 2
  o%head_dim = 8
  call check(rfa_context_create(MPI_COMM_WORLD, o, ctx) == RFA_SUCCESS, "create: " // rfa_get_last_error_message())

  threads = 0
  !$omp parallel num_threads(2) shared(threads)
  !$omp single
  threads = omp_get_num_threads()
  !$omp end single
  !$omp end parallel
  skip = merge(1, 0, provided /= MPI_THREAD_FUNNELED .or. threads < 2)
  call MPI_Allreduce(skip, any_skip, 1, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD)
  if (any_skip /= 0) then
    if (rank == 0) print '(a, i0, a, i0)', "destroy_refused_test: SKIP: MPI's thread level ", provided, &
                         " or OpenMP threads ", threads
    call check(rfa_context_destroy(ctx) == RFA_SUCCESS, "destroy: " // rfa_get_last_error_message())
    call check(rfa_finalize() == RFA_SUCCESS, "rfa_finalize: " // rfa_get_last_error_message())
    call MPI_Finalize()
    if (failures /= 0) error stop 1
    stop 77
  end if

  status = RFA_SUCCESS
  refusal = ""
  !$omp parallel num_threads(2) shared(status, refusal, ctx)
  if (omp_get_thread_num() == 1) then
    status = rfa_context_destroy(ctx)
    refusal = rfa_get_last_error_message()  ! each thread has its own
  end if
  !$omp end parallel
  call check(status == RFA_ERROR_INVALID_USAGE .and. index(refusal, "not the thread that initialized MPI") > 0, &
             "a destroy from a thread MPI_THREAD_FUNNELED forbids: " // trim(refusal))
  call check(rfa_context_get_local_seq(ctx, L) == RFA_SUCCESS .and. L == 8, &
             "after the refused destroy the handle is still the context: " // rfa_get_last_error_message())
  call check(rfa_context_destroy(ctx) == RFA_SUCCESS, "the destroy in turn: " // rfa_get_last_error_message())
  call check(rfa_context_get_local_seq(ctx, L) == RFA_ERROR_INVALID_ARGUMENT, "the destroyed handle was not reset")
  ! rfa owns Kokkos here: it finalizes only once no context is left.
  call check(rfa_finalize() == RFA_SUCCESS, "rfa_finalize (a context left alive?): " // rfa_get_last_error_message())

  call MPI_Allreduce(failures, total_failures, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  if (rank == 0) print '(a, i0, a)', "destroy_refused_test: ", total_failures, " failed checks over all ranks"
  call MPI_Finalize()
  if (total_failures /= 0) error stop 1

contains

  subroutine check(condition, what)
    logical, intent(in) :: condition
    character(len=*), intent(in) :: what
    if (.not. condition) then
      write (*, '(a, i0, a, a)') "rank ", rank, ": FAILED: ", what
      failures = failures + 1
    end if
  end subroutine

end program destroy_refused_test
