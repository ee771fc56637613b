! SPDX-License-Identifier: BSD-3-Clause
! The Fortran module under mpiexec -n 2: constants match the C header, both kinds of
! communicator work through the one generic, and forward and backward on sharded fp32 arrays
! match an independent float64 reference (tests/reference, through a bind(c) bridge); bf16
! forward and backward, with and without sinks, and the gathers exercise the 16-bit
! interfaces; packed documents pass through c_loc; attention
! sinks match the reference with its sinks, their gradient included; soft-capped scores match
! it with its cap; an invalid call returns its code and message.
program fortran_api_test
  use, intrinsic :: iso_c_binding
  use, intrinsic :: ieee_arithmetic, only: ieee_is_nan
  use mpi_f08
  use rfa
  implicit none

  interface
    subroutine fortran_test_reference(batch, seq, heads, kv_heads, head_dim, causal, q, k, v, dout, &
                                      out, lse, dq, dk, dv) bind(c)
      import :: c_int, c_int64_t, c_float
      integer(c_int64_t), value :: batch, seq, heads, kv_heads, head_dim
      integer(c_int), value :: causal
      real(c_float), intent(in) :: q(*), k(*), v(*), dout(*)
      real(c_float), intent(out) :: out(*), lse(*), dq(*), dk(*), dv(*)
    end subroutine
    subroutine fortran_test_reference_sinks(batch, seq, heads, kv_heads, head_dim, causal, sinks, q, k, v, dout, &
                                            out, lse, dq, dk, dv, dsinks) bind(c)
      import :: c_int, c_int64_t, c_float
      integer(c_int64_t), value :: batch, seq, heads, kv_heads, head_dim
      integer(c_int), value :: causal
      real(c_float), intent(in) :: sinks(*), q(*), k(*), v(*), dout(*)
      real(c_float), intent(out) :: out(*), lse(*), dq(*), dk(*), dv(*), dsinks(*)
    end subroutine
    subroutine fortran_test_reference_softcap(batch, seq, heads, kv_heads, head_dim, causal, softcap, q, k, v, &
                                              dout, out, lse, dq, dk, dv) bind(c)
      import :: c_int, c_int64_t, c_float, c_double
      integer(c_int64_t), value :: batch, seq, heads, kv_heads, head_dim
      integer(c_int), value :: causal
      real(c_double), value :: softcap
      real(c_float), intent(in) :: q(*), k(*), v(*), dout(*)
      real(c_float), intent(out) :: out(*), lse(*), dq(*), dk(*), dv(*)
    end subroutine
    subroutine fortran_test_reference_value_dim(batch, seq, heads, kv_heads, head_dim, value_dim, causal, q, k, v, &
                                                dout, out, lse, dq, dk, dv) bind(c)
      import :: c_int, c_int64_t, c_float
      integer(c_int64_t), value :: batch, seq, heads, kv_heads, head_dim, value_dim
      integer(c_int), value :: causal
      real(c_float), intent(in) :: q(*), k(*), v(*), dout(*)
      real(c_float), intent(out) :: out(*), lse(*), dq(*), dk(*), dv(*)
    end subroutine
    integer(c_int) function fortran_test_c_constants(values, capacity) bind(c)
      import :: c_int, c_int64_t
      integer(c_int64_t), intent(out) :: values(*)
      integer(c_int), value :: capacity
    end function
    type(c_ptr) function fortran_test_c_version_string() bind(c)
      import :: c_ptr
    end function
    integer(c_int) function fortran_test_c_field_offsets(values, capacity) bind(c)
      import :: c_int, c_int64_t
      integer(c_int64_t), intent(out) :: values(*)
      integer(c_int), value :: capacity
    end function
  end interface

  integer(c_int64_t), parameter :: B = 2, H = 4, HKV = 2, D = 16
  integer :: rank, nranks, failures, total_failures, position, position_int, ranks_seen
  integer(c_int64_t) :: S, L, released
  type(rfa_options) :: opts
  type(rfa_context) :: ring, ring_int, bad
  real(c_float), allocatable :: gq(:,:,:,:), gk(:,:,:,:), gv(:,:,:,:), gdo(:,:,:,:)
  real(c_float), allocatable :: rout(:,:,:,:), rlse(:,:,:), rdq(:,:,:,:), rdk(:,:,:,:), rdv(:,:,:,:)
  real(c_float), allocatable, target :: q(:,:,:,:), k(:,:,:,:), v(:,:,:,:), dout(:,:,:,:), out(:,:,:,:), lse(:,:,:)
  real(c_float), allocatable, target :: dq(:,:,:,:), dk(:,:,:,:), dv(:,:,:,:)
  real(c_float), allocatable :: eout(:,:,:,:), else_ref(:,:,:), edq(:,:,:,:), edk(:,:,:,:), edv(:,:,:,:)
  integer(c_int64_t), allocatable :: positions(:)
  character(len=46) :: plan
  character(len=80) :: long_plan

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks)
  failures = 0

  call check_constants()
  call check(rfa_check_version() == RFA_SUCCESS, "rfa_check_version")

  ! ---- a ring over type(MPI_Comm), and the same over the integer handle
  call check_ok(rfa_options_init(opts), "rfa_options_init")
  call check(opts%struct_size == c_sizeof(opts) .and. opts%version == RFA_OPTIONS_VERSION, "options defaults")
  S = 8 * nranks * 3                       ! zigzag and balanced: a multiple of 2P and 8P
  opts%layout = RFA_LAYOUT_ZIGZAG
  opts%mask = RFA_MASK_CAUSAL
  opts%dtype = RFA_DTYPE_FLOAT32
  opts%ring_order = RFA_RING_ORDER_IDENTITY
  opts%batch = B
  opts%seq_total = S
  opts%heads = H
  opts%kv_heads = HKV
  opts%head_dim = D
  call check_ok(rfa_context_create(MPI_COMM_WORLD, opts, ring), "create (type(MPI_Comm))")
  call check_ok(rfa_context_create(MPI_COMM_WORLD%MPI_VAL, opts, ring_int), "create (integer)")
  call check_ok(rfa_context_get_position(ring, position), "position")
  call check_ok(rfa_context_get_position(ring_int, position_int), "position (integer)")
  call check_ok(rfa_context_get_ranks(ring, ranks_seen), "ranks")
  call check(position == rank .and. position_int == rank .and. ranks_seen == nranks, "ring position and size")
  call check_ok(rfa_context_get_plan(ring, plan), "plan")
  call check(plan(1:46) == "ring, zigzag: chosen by the caller (options.st", "the plan says the caller chose the ring")
  call check_ok(rfa_context_get_plan(ring, long_plan), "plan, in a longer text")
  call check(trim(long_plan) == "ring, zigzag: chosen by the caller (options.strategy)", &
             "a text longer than the plan holds the plan and blanks: " // long_plan)
  call check_options_read_back()
  call check_ok(rfa_context_destroy(ring_int), "destroy (integer)")
  call check_ok(rfa_context_destroy(ring_int), "destroy twice is a no-op")
  call check_ok(rfa_context_get_local_seq(ring, L), "local seq")
  call check(L == S / nranks, "L = S / P")
  allocate(positions(L))
  call check_ok(rfa_context_get_local_positions(ring, positions), "local positions")
  call check(positions(1) == rank * (S / (2 * nranks)), "zigzag: first row is chunk r")
  call check_layout_helpers()

  ! ---- the whole problem, the same on every rank, and its float64 reference
  allocate(gq(D, H, S, B), gdo(D, H, S, B), gk(D, HKV, S, B), gv(D, HKV, S, B))
  allocate(rout(D, H, S, B), rlse(S, H, B), rdq(D, H, S, B), rdk(D, HKV, S, B), rdv(D, HKV, S, B))
  call fill(gq, 1)
  call fill(gk, 2)
  call fill(gv, 3)
  call fill(gdo, 4)
  call fortran_test_reference(B, S, H, HKV, D, 1_c_int, gq, gk, gv, gdo, rout, rlse, rdq, rdk, rdv)

  ! ---- this rank's shards, forward and backward
  allocate(q(D, H, L, B), dout(D, H, L, B), out(D, H, L, B), dq(D, H, L, B), lse(L, H, B))
  allocate(k(D, HKV, L, B), v(D, HKV, L, B), dk(D, HKV, L, B), dv(D, HKV, L, B))
  allocate(eout(D, H, L, B), else_ref(L, H, B), edq(D, H, L, B), edk(D, HKV, L, B), edv(D, HKV, L, B))
  call check_ok(rfa_scatter_bshd(ring, gq, q), "scatter q")
  call check_ok(rfa_scatter_bshd(ring, gk, k), "scatter k")
  call check_ok(rfa_scatter_bshd(ring, gv, v), "scatter v")
  call check_ok(rfa_scatter_bshd(ring, gdo, dout), "scatter dout")
  out = ieee_nan()
  lse = ieee_nan()
  dq = ieee_nan()
  dk = ieee_nan()
  dv = ieee_nan()
  call check_ok(rfa_forward(ring, q, k, v, out, lse), "forward")
  call check_ok(rfa_backward(ring, q, k, v, out, dout, lse, dq, dk, dv), "backward")
  call check_wrong_shapes()
  call check_wrong_sharding_shapes()
  call check_wrong_dtype()
  call check_refusal_after_mismatch()
  call check_gathers()

  call compare_to_reference(ring, rout, rlse, rdq, rdk, rdv, 2.0e-6, "")
  ! the workspace the ring keeps between calls (from the call after each pass's first), given back once
  call check_ok(rfa_forward(ring, q, k, v, out, lse), "forward in the kept workspace")
  call check_close(out, eout, 2.0e-6, "out, again")
  call check_addresses_streams_and_version()
  call check_ok(rfa_context_release_workspace(ring, released), "release workspace")
  call check(released > 0, "the ring kept no workspace")
  call check_ok(rfa_context_release_workspace(ring, released), "release workspace again")
  call check(released == 0, "a second release freed memory")
  call check_ok(rfa_context_release_workspace(ring), "release workspace, no count")
  call check_ok(rfa_context_destroy(ring), "destroy")

  call check_balanced_layout()  ! before check_bf16_forward, which replaces the causal reference
  call check_needed_exchange()  ! likewise
  call check_bf16_forward()
  call check_bf16_sinks_and_gathers()  ! after check_bf16_forward: the inputs hold bf16 values
  call check_documents()
  call check_sequence_documents()
  call check_sinks()
  call check_softcap()
  call check_mask_ranges()
  call check_window_and_document_builders()
  call check_value_head_dim()

  ! ---- an invalid call: code and message
  opts%heads = 3
  if (rfa_context_create(MPI_COMM_WORLD, opts, bad) /= RFA_ERROR_INVALID_ARGUMENT) then
    call fail("heads = 3, kv_heads = 2 must be RFA_ERROR_INVALID_ARGUMENT")
  else if (index(rfa_get_last_error_message(), "not a multiple of options.kv_heads") == 0) then
    call fail("message: " // rfa_get_last_error_message())
  end if
  call check(rfa_get_error_string(RFA_ERROR_INVALID_USAGE) == &
             "invalid usage (ranks disagree, or call out of order)", "rfa_get_error_string")

  call check_ok(rfa_finalize(), "rfa_finalize")
  call MPI_Allreduce(failures, total_failures, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  if (rank == 0) print '(a, i0, a)', "fortran_api_test: ", total_failures, " failed checks over all ranks"
  call MPI_Finalize()
  if (total_failures /= 0) error stop 1

contains

  subroutine fail(what)
    character(len=*), intent(in) :: what
    write (*, '(a, i0, a, a)') "rank ", rank, ": FAILED: ", what
    failures = failures + 1
  end subroutine

  subroutine check(condition, what)
    logical, intent(in) :: condition
    character(len=*), intent(in) :: what
    if (.not. condition) call fail(what)
  end subroutine

  ! The call was refused with RFA_ERROR_INVALID_ARGUMENT and a message holding `part`.
  subroutine check_refused(status, part, what)
    integer(c_int), intent(in) :: status
    character(len=*), intent(in) :: part, what
    call check(status == RFA_ERROR_INVALID_ARGUMENT .and. index(rfa_get_last_error_message(), part) > 0, &
               what // ": " // rfa_get_last_error_message())
  end subroutine

  subroutine check_ok(status, what)
    integer(c_int), intent(in) :: status
    character(len=*), intent(in) :: what
    if (status /= RFA_SUCCESS) call fail(what // ": " // rfa_get_error_string(status) // ": " // &
                                         rfa_get_last_error_message())
  end subroutine

  subroutine check_close(got, want, tolerance, what)
    real(c_float), intent(in) :: got(:,:,:,:), want(:,:,:,:)
    real, intent(in) :: tolerance
    character(len=*), intent(in) :: what
    real :: err
    err = worst_error(reshape(got, [size(got)]), reshape(want, [size(want)]))
    if (rank == 0) print '(a, a, es9.2)', what, ": max |error| ", err
    if (.not. (err <= tolerance)) call fail(what // " differs from the float64 reference")
  end subroutine

  subroutine check_close3(got, want, tolerance, what)
    real(c_float), intent(in) :: got(:,:,:), want(:,:,:)
    real, intent(in) :: tolerance
    character(len=*), intent(in) :: what
    real :: err
    err = worst_error(reshape(got, [size(got)]), reshape(want, [size(want)]))
    if (.not. (err <= tolerance)) call fail(what // " differs from the float64 reference")
  end subroutine

  !> max |got - want|, or huge() where got holds a NaN: maxval skips NaN elements, and the
  !> outputs are set to NaN before each call so that an element left unwritten is noticed.
  real function worst_error(got, want)
    real(c_float), intent(in) :: got(:), want(:)
    if (any(ieee_is_nan(got))) then
      worst_error = huge(worst_error)
    else
      worst_error = maxval(abs(got - want))
    end if
  end function

  !> Values in [-1, 1) from a seed: the same on every rank.
  subroutine fill(x, seed)
    real(c_float), intent(out) :: x(:,:,:,:)
    integer, intent(in) :: seed
    integer(c_int64_t) :: state
    integer :: i1, i2, i3, i4
    state = 12345_c_int64_t * seed + 1
    do i4 = 1, size(x, 4)
      do i3 = 1, size(x, 3)
        do i2 = 1, size(x, 2)
          do i1 = 1, size(x, 1)
            state = modulo(state * 48271_c_int64_t, 2147483647_c_int64_t)
            x(i1, i2, i3, i4) = real(state, c_float) / 1073741823.5 - 1.0
          end do
        end do
      end do
    end do
  end subroutine

  real(c_float) function ieee_nan()
    use, intrinsic :: ieee_arithmetic
    ieee_nan = ieee_value(0.0_c_float, ieee_quiet_nan)
  end function

  !> bf16 bits of a float (truncation: the test then uses exactly the values it stored).
  elemental integer(c_int16_t) function to_bf16(x)
    real(c_float), intent(in) :: x
    to_bf16 = int(ishft(transfer(x, 0_c_int32_t), -16), c_int16_t)
  end function

  elemental real(c_float) function from_bf16(bits)
    integer(c_int16_t), intent(in) :: bits
    from_bf16 = transfer(ishft(int(bits, c_int32_t), 16), 0.0_c_float)
  end function

  ! Arrays whose shape does not fit the context: every rank fails together, and the rank whose
  ! array is wrong (only the last one here) says which array and which shape was expected.
  ! ---- the layout helpers without a context: the context's answers for zigzag, rfa.h's rule for
  ! stripe, and clean refusals
  subroutine check_layout_helpers()
    integer(c_int64_t) :: n, i
    integer(c_int64_t), allocatable :: p(:), short(:)
    call check_ok(rfa_layout_local_seq(RFA_LAYOUT_ZIGZAG, S, nranks, n), "rfa_layout_local_seq")
    call check(n == L, "rfa_layout_local_seq: L = S / P")
    allocate(p(L + 1), short(L - 1))
    p = -1
    call check_ok(rfa_layout_positions(RFA_LAYOUT_ZIGZAG, S, nranks, rank, p), "rfa_layout_positions (zigzag)")
    call check(all(p(1:L) == positions) .and. p(L + 1) == -1, "rfa_layout_positions: the context's positions")
    call check_ok(rfa_layout_positions(RFA_LAYOUT_STRIPE, S, nranks, rank, p), "rfa_layout_positions (stripe)")
    call check(all(p(1:L) == [((i - 1) * nranks + rank, i = 1, L)]), "rfa_layout_positions: token t on rank t mod P")
    call check(rfa_layout_positions(RFA_LAYOUT_ZIGZAG, S, nranks, rank, short) == RFA_ERROR_INVALID_ARGUMENT, &
               "rfa_layout_positions: an array shorter than L")
    call check(index(rfa_get_last_error_message(), "capacity") > 0, &
               "rfa_layout_positions' message: " // rfa_get_last_error_message())
    call check(rfa_layout_positions(RFA_LAYOUT_ZIGZAG, S, nranks, nranks, p) == RFA_ERROR_INVALID_ARGUMENT, &
               "rfa_layout_positions: position P")
    call check(rfa_layout_positions(RFA_LAYOUT_BALANCED, S, nranks, rank, p) == RFA_ERROR_INVALID_ARGUMENT, &
               "rfa_layout_positions: the balanced layout needs a context")
  end subroutine

  subroutine check_wrong_shapes()
    real(c_float), allocatable, target :: short_q(:,:,:,:), swapped_lse(:,:,:)
    integer(c_int) :: status
    if (rank == nranks - 1) then
      allocate(short_q(D, H, L - 1, B))
    else
      allocate(short_q(D, H, L, B))
    end if
    short_q = 0
    status = rfa_forward(ring, short_q, k, v, out, lse)
    if (status /= RFA_ERROR_INVALID_ARGUMENT) then
      call fail("forward with a short q must be RFA_ERROR_INVALID_ARGUMENT on every rank")
    else if (rank == nranks - 1 .and. index(rfa_get_last_error_message(), "q has shape") == 0) then
      call fail("short q message: " // rfa_get_last_error_message())
    end if
    allocate(swapped_lse(H, L, B))  ! (heads, tokens, batch) instead of (tokens, heads, batch)
    swapped_lse = 0
    status = rfa_backward(ring, q, k, v, out, dout, swapped_lse, dq, dk, dv)
    if (H /= L .and. status /= RFA_ERROR_INVALID_ARGUMENT) then
      call fail("backward with lse(H, L, B) must be RFA_ERROR_INVALID_ARGUMENT")
    else if (H /= L .and. index(rfa_get_last_error_message(), "lse has shape") == 0) then
      call fail("swapped lse message: " // rfa_get_last_error_message())
    end if
  end subroutine

  ! Arrays that do not fit a context made unusable by a call mismatch (rank 0 in a forward while
  ! the others are in a backward): the collective call's own failure (RFA_ERROR_INVALID_USAGE,
  ! the context unusable) comes back, not the binding's shape message, so that the caller does not
  ! mend its arrays and call a dead context again.
  subroutine check_refusal_after_mismatch()
    type(rfa_context) :: lost
    real(c_float), allocatable, target :: short_q(:,:,:,:), sinks(:), dsinks(:)
    integer(c_int) :: status
    if (nranks < 2) return  ! one rank cannot disagree with itself
    call check_ok(rfa_context_create(MPI_COMM_WORLD, opts, lost), "create the context to lose")
    if (rank == 0) then
      status = rfa_forward(lost, q, k, v, out, lse)
    else
      status = rfa_backward(lost, q, k, v, out, dout, lse, dq, dk, dv)
    end if
    call check(status == RFA_ERROR_CALL_MISMATCH, "forward against backward: " // rfa_get_last_error_message())
    allocate(short_q(D, H, L - 1, B), sinks(H), dsinks(H))
    short_q = 0
    sinks = 0
    status = rfa_forward(lost, short_q, k, v, out, lse)
    call check(status == RFA_ERROR_INVALID_USAGE .and. index(rfa_get_last_error_message(), "unusable") > 0, &
               "a short q on an unusable context: " // rfa_get_last_error_message())
    status = rfa_backward(lost, short_q, k, v, out, dout, lse, dq, dk, dv)
    call check(status == RFA_ERROR_INVALID_USAGE .and. index(rfa_get_last_error_message(), "unusable") > 0, &
               "a short q in a backward on an unusable context: " // rfa_get_last_error_message())
    status = rfa_forward_with_sinks(lost, short_q, k, v, sinks, out, lse)
    call check(status == RFA_ERROR_INVALID_USAGE, "a short q with sinks on an unusable context: " // &
               rfa_get_last_error_message())
    status = rfa_backward_with_sinks(lost, short_q, k, v, out, dout, lse, sinks, dq, dk, dv, dsinks)
    call check(status == RFA_ERROR_INVALID_USAGE, "a short q in a backward with sinks on an unusable context: " // &
               rfa_get_last_error_message())
    status = rfa_allgather_bshd(lost, short_q, gq)
    call check(status == RFA_ERROR_INVALID_USAGE, "a short local in an all-gather on an unusable context: " // &
               rfa_get_last_error_message())
    call check_ok(rfa_context_destroy(lost), "destroy the unusable context")
  end subroutine

  ! C sizes every tensor from the context's dtype: arrays of the other kind (16-bit patterns on an
  ! fp32 context, real(c_float) on a bf16 one) are refused by every call, forward, backward, with
  ! sinks and sharding, before C reads or writes them. The 16-bit arrays sit in the first half of
  ! a larger one whose second half, a guard, must stay untouched (half the bytes C would write).
  subroutine check_wrong_dtype()
    integer(c_int16_t), allocatable, target :: big(:,:,:,:), q16(:,:,:,:), k16(:,:,:,:), g16(:,:,:,:)
    real(c_float) :: sinks(H), dsinks(H)
    type(rfa_context) :: ring16
    type(rfa_options) :: o16
    character(len=*), parameter :: on_fp32 = "integer(c_int16_t) but this context's dtype is fp32"
    character(len=*), parameter :: on_bf16 = "real(c_float) but this context's dtype is bf16"
    allocate(big(D, H, L, 2 * B), q16(D, H, L, B), k16(D, HKV, L, B), g16(D, H, S, B))
    big = -7
    q16 = 0
    k16 = 0
    g16 = 0
    sinks = 0
    call check_refused(rfa_forward(ring, q16, k16, k16, big(:, :, :, 1:B), lse), on_fp32, "16-bit forward, fp32 ring")
    call check_refused(rfa_backward(ring, q16, k16, k16, q16, q16, lse, big(:, :, :, 1:B), k16, k16), on_fp32, &
                       "16-bit backward, fp32 ring")
    call check_refused(rfa_forward_with_sinks(ring, q16, k16, k16, sinks, big(:, :, :, 1:B), lse), on_fp32, &
                       "16-bit forward with sinks, fp32 ring")
    call check_refused(rfa_backward_with_sinks(ring, q16, k16, k16, q16, q16, lse, sinks, big(:, :, :, 1:B), k16, &
                                               k16, dsinks), on_fp32, "16-bit backward with sinks, fp32 ring")
    call check_refused(rfa_scatter_bshd(ring, g16, big(:, :, :, 1:B)), on_fp32, "16-bit scatter, fp32 ring")
    call check_refused(rfa_gather_bshd(ring, q16, g16), on_fp32, "16-bit gather, fp32 ring")
    call check_refused(rfa_allgather_bshd(ring, q16, g16), on_fp32, "16-bit all-gather, fp32 ring")
    call check(all(big == -7), "a refused 16-bit call on an fp32 ring wrote into its arrays")
    o16 = opts
    o16%dtype = RFA_DTYPE_BFLOAT16
    call check_ok(rfa_context_create(MPI_COMM_WORLD, o16, ring16), "create bf16 (dtype checks)")
    call check_refused(rfa_forward(ring16, q, k, v, out, lse), on_bf16, "fp32 forward, bf16 ring")
    call check_refused(rfa_backward(ring16, q, k, v, out, dout, lse, dq, dk, dv), on_bf16, "fp32 backward, bf16 ring")
    call check_refused(rfa_scatter_bshd(ring16, gq, q), on_bf16, "fp32 scatter, bf16 ring")
    call check_refused(rfa_gather_bshd(ring16, q, gq), on_bf16, "fp32 gather, bf16 ring")
    call check_refused(rfa_allgather_bshd(ring16, q, gq), on_bf16, "fp32 all-gather, bf16 ring")
    call check_ok(rfa_context_destroy(ring16), "destroy bf16 (dtype checks)")
  end subroutine

  ! The sharding calls see only pointers in C: an array shorter than the context's tokens or
  ! batch is refused by name before anything is read or written, the all-gather on every rank
  ! (the last rank's local array one token short), and the lse calls too.
  subroutine check_wrong_sharding_shapes()
    real(c_float), allocatable, target :: short_global(:,:,:,:), short_local(:,:,:,:), lse_global(:,:,:), &
                                           short_lse(:,:,:), short_lse_global(:,:,:), fitting_lse(:,:,:)
    integer(c_int) :: status
    allocate(short_global(D, H, S - 1, B), short_local(D, H, L - 1, B), lse_global(S, H, B), short_lse(L, H, B - 1))
    allocate(short_lse_global(S - 1, H, B), fitting_lse(L, H, B))
    short_global = 0
    short_local = 0
    lse_global = 0
    short_lse = 0
    short_lse_global = 0
    call check_refused(rfa_scatter_bshd(ring, short_global, q), "rfa_scatter_bshd: global has shape", &
                       "scatter from a global one token short")
    call check_refused(rfa_scatter_bshd(ring, gq, short_local), "local has shape", &
                       "scatter into a local one token short")
    call check_refused(rfa_gather_bshd(ring, q, short_global), "rfa_gather_bshd: global has shape", &
                       "gather into a global one token short")
    if (rank == nranks - 1) then
      status = rfa_allgather_bshd(ring, short_local, gq)
    else
      status = rfa_allgather_bshd(ring, q, gq)
    end if
    call check(status == RFA_ERROR_INVALID_ARGUMENT, "an all-gather with one rank's local one token short must be " // &
               "RFA_ERROR_INVALID_ARGUMENT on every rank")
    if (rank == nranks - 1) call check(index(rfa_get_last_error_message(), "rfa_allgather_bshd: local has shape") > 0, &
                                       "short all-gather message: " // rfa_get_last_error_message())
    call check_refused(rfa_scatter_lse(ring, lse_global, short_lse), "rfa_scatter_lse: local has shape", &
                       "scatter into an lse one batch entry short")
    call check_refused(rfa_gather_lse(ring, lse, short_lse_global), "rfa_gather_lse: global has shape", &
                       "gather into an lse one token short")
    ! The right shapes still pass.
    call check_ok(rfa_scatter_lse(ring, lse_global, fitting_lse), "scatter lse")
  end subroutine

  subroutine check_bf16_forward()
    type(rfa_context) :: ring16
    type(rfa_options) :: o16
    integer(c_int16_t), allocatable :: g16q(:,:,:,:), g16k(:,:,:,:), g16v(:,:,:,:)
    integer(c_int16_t), allocatable :: q16(:,:,:,:), k16(:,:,:,:), v16(:,:,:,:), out16(:,:,:,:), ref16(:,:,:,:)
    integer(c_int16_t), allocatable :: g16do(:,:,:,:), do16(:,:,:,:), dq16(:,:,:,:), dk16(:,:,:,:), dv16(:,:,:,:)
    integer(c_int16_t), allocatable :: refk16(:,:,:,:), refv16(:,:,:,:)
    real(c_float), allocatable :: lse16(:,:,:)
    o16 = opts
    o16%dtype = RFA_DTYPE_BFLOAT16
    o16%mask = RFA_MASK_NONE
    o16%layout = RFA_LAYOUT_STRIPE
    call check_ok(rfa_context_create(MPI_COMM_WORLD, o16, ring16), "create bf16")
    ! Inputs rounded to bf16; the reference sees exactly those values.
    g16q = to_bf16(gq)
    g16k = to_bf16(gk)
    g16v = to_bf16(gv)
    g16do = to_bf16(gdo)
    gq = from_bf16(g16q)
    gk = from_bf16(g16k)
    gv = from_bf16(g16v)
    gdo = from_bf16(g16do)
    call fortran_test_reference(B, S, H, HKV, D, 0_c_int, gq, gk, gv, gdo, rout, rlse, rdq, rdk, rdv)
    allocate(q16(D, H, L, B), out16(D, H, L, B), ref16(D, H, L, B), k16(D, HKV, L, B), v16(D, HKV, L, B))
    allocate(lse16(L, H, B))
    call check_ok(rfa_scatter_bshd(ring16, g16q, q16), "scatter bf16 q")
    call check_ok(rfa_scatter_bshd(ring16, g16k, k16), "scatter bf16 k")
    call check_ok(rfa_scatter_bshd(ring16, g16v, v16), "scatter bf16 v")
    call check_ok(rfa_forward(ring16, q16, k16, v16, out16, lse16), "forward bf16")
    call check_ok(rfa_scatter_bshd(ring16, to_bf16(rout), ref16), "scatter bf16 reference")
    ! bf16 keeps 8 bits of mantissa: here |out| < 0.5 and the gradients < 1, whose ulps are
    ! 2^-9 and 2^-8; measured: out within one ulp (1.95e-3), dq and dk within 4.9e-4, dv 1.95e-3.
    ! The bounds leave two to four ulps (other CPUs' bf16 products round differently), and fail a
    ! result off by a fifth (scaled by 0.8) or missing a ring step.
    call check_close(from_bf16(out16), from_bf16(ref16), 8.0e-3, "bf16 out")
    ! The backward through the 16-bit interface: each gradient in its own array. dK and dV
    ! have the same shape here, so the reference's must differ by more than the tolerance.
    allocate(do16(D, H, L, B), dq16(D, H, L, B), dk16(D, HKV, L, B), dv16(D, HKV, L, B))
    allocate(refk16(D, HKV, L, B), refv16(D, HKV, L, B))
    call check_ok(rfa_scatter_bshd(ring16, g16do, do16), "scatter bf16 dout")
    call check_ok(rfa_backward(ring16, q16, k16, v16, out16, do16, lse16, dq16, dk16, dv16), "backward bf16")
    call check_ok(rfa_scatter_bshd(ring16, to_bf16(rdq), ref16), "scatter bf16 reference dq")
    call check_ok(rfa_scatter_bshd(ring16, to_bf16(rdk), refk16), "scatter bf16 reference dk")
    call check_ok(rfa_scatter_bshd(ring16, to_bf16(rdv), refv16), "scatter bf16 reference dv")
    call check(maxval(abs(rdk - rdv)) > 0.2, "the reference's dk and dv are too alike to tell apart")
    call check_close(from_bf16(dq16), from_bf16(ref16), 1.6e-2, "bf16 dq")
    call check_close(from_bf16(dk16), from_bf16(refk16), 1.6e-2, "bf16 dk")
    call check_close(from_bf16(dv16), from_bf16(refv16), 1.6e-2, "bf16 dv")
    call check_ok(rfa_context_destroy(ring16), "destroy bf16")
  end subroutine

  ! The 16-bit forms of the sinks calls and of the gathers, on a bf16 ring without a mask: out,
  ! lse, the gradients and dsinks against the reference with the same sinks (the inputs already
  ! hold bf16 values, so the reference sees exactly what the ring does). Then this rank's bf16
  ! out gathered into a global array (its rows placed bit for bit, the others untouched) and
  ! gathered on every rank (every row bit for bit: the ranks' gathers into zeros, OR-ed together
  ! over MPI, make the whole array, each row written by one rank).
  subroutine check_bf16_sinks_and_gathers()
    type(rfa_context) :: ring16
    type(rfa_options) :: o16
    real(c_float) :: sinks(H), dsinks(H), rdsinks(H)
    real(c_float), allocatable :: sout(:,:,:,:), slse(:,:,:), sdq(:,:,:,:), sdk(:,:,:,:), sdv(:,:,:,:)
    integer(c_int16_t), allocatable :: q16(:,:,:,:), k16(:,:,:,:), v16(:,:,:,:), do16(:,:,:,:), out16(:,:,:,:)
    integer(c_int16_t), allocatable :: dq16(:,:,:,:), dk16(:,:,:,:), dv16(:,:,:,:), refq(:,:,:,:), refkv(:,:,:,:)
    integer(c_int16_t), allocatable :: global16(:,:,:,:), all16(:,:,:,:)
    integer, allocatable :: whole(:,:,:,:)
    real(c_float), allocatable :: lse16(:,:,:), reflse(:,:,:)
    integer(c_int64_t) :: t
    integer :: i
    logical :: placed, untouched
    sinks = [1.5_c_float, -0.5_c_float, 0.25_c_float, 3.0_c_float]
    allocate(sout, mold=rout)
    allocate(slse, mold=rlse)
    allocate(sdq, mold=rdq)
    allocate(sdk, mold=rdk)
    allocate(sdv, mold=rdv)
    call fortran_test_reference_sinks(B, S, H, HKV, D, 0_c_int, sinks, gq, gk, gv, gdo, sout, slse, sdq, sdk, sdv, &
                                      rdsinks)
    o16 = opts
    o16%dtype = RFA_DTYPE_BFLOAT16
    o16%mask = RFA_MASK_NONE
    o16%heads = H
    o16%attention_sinks = 1
    call check_ok(rfa_context_create(MPI_COMM_WORLD, o16, ring16), "create bf16 with sinks")
    allocate(q16(D, H, L, B), out16(D, H, L, B), do16(D, H, L, B), dq16(D, H, L, B), refq(D, H, L, B))
    allocate(k16(D, HKV, L, B), v16(D, HKV, L, B), dk16(D, HKV, L, B), dv16(D, HKV, L, B), refkv(D, HKV, L, B))
    allocate(lse16(L, H, B), reflse(L, H, B))
    call check_ok(rfa_scatter_bshd(ring16, to_bf16(gq), q16), "scatter bf16 q (sinks)")
    call check_ok(rfa_scatter_bshd(ring16, to_bf16(gk), k16), "scatter bf16 k (sinks)")
    call check_ok(rfa_scatter_bshd(ring16, to_bf16(gv), v16), "scatter bf16 v (sinks)")
    call check_ok(rfa_scatter_bshd(ring16, to_bf16(gdo), do16), "scatter bf16 dout (sinks)")
    call check_ok(rfa_forward_with_sinks(ring16, q16, k16, v16, sinks, out16, lse16), "forward bf16 with sinks")
    call check_ok(rfa_scatter_bshd(ring16, to_bf16(sout), refq), "scatter bf16 reference out (sinks)")
    call check_close(from_bf16(out16), from_bf16(refq), 8.0e-3, "bf16 out with sinks")
    call check_ok(rfa_scatter_lse(ring16, slse, reflse), "scatter reference lse (bf16 sinks)")
    call check_close3(lse16, reflse, 1.0e-4, "bf16 lse with sinks")
    dsinks = ieee_nan()
    call check_ok(rfa_backward_with_sinks(ring16, q16, k16, v16, out16, do16, lse16, sinks, dq16, dk16, dv16, dsinks), &
                  "backward bf16 with sinks")
    call check_ok(rfa_scatter_bshd(ring16, to_bf16(sdq), refq), "scatter bf16 reference dq (sinks)")
    call check_close(from_bf16(dq16), from_bf16(refq), 1.6e-2, "bf16 dq with sinks")
    call check_ok(rfa_scatter_bshd(ring16, to_bf16(sdk), refkv), "scatter bf16 reference dk (sinks)")
    call check_close(from_bf16(dk16), from_bf16(refkv), 1.6e-2, "bf16 dk with sinks")
    call check_ok(rfa_scatter_bshd(ring16, to_bf16(sdv), refkv), "scatter bf16 reference dv (sinks)")
    call check_close(from_bf16(dv16), from_bf16(refkv), 1.6e-2, "bf16 dv with sinks")
    call check(maxval(abs(sdk - sdv)) > 0.2, "the reference's dk and dv (sinks) are too alike to tell apart")
    ! dsinks sums over every row of bf16 out and dout: head by head within 1% (measured: 0.35% at
    ! most), each far enough from zero that a dsinks left unwritten or zero fails.
    call check(minval(abs(rdsinks)) > 1.0e-2, "the reference's dsinks are too small to test")
    call check(all(abs(dsinks - rdsinks) <= 1.0e-2 * abs(rdsinks) + 1.0e-4), "bf16 dsinks")

    allocate(global16(D, H, S, B), all16(D, H, S, B), whole(D, H, S, B))
    global16 = -1_c_int16_t
    call check_ok(rfa_gather_bshd(ring16, out16, global16), "gather bf16 out")
    placed = .true.
    untouched = .true.
    do t = 0, S - 1
      i = findloc(positions_of(ring16), t, dim=1)
      if (i > 0) then
        placed = placed .and. all(global16(:, :, t + 1, :) == out16(:, :, i, :))
      else
        untouched = untouched .and. all(global16(:, :, t + 1, :) == -1_c_int16_t)
      end if
    end do
    call check(placed, "bf16 gather: this rank's rows placed bit for bit")
    call check(untouched, "bf16 gather: the other ranks' rows untouched")
    all16 = -1_c_int16_t
    call check_ok(rfa_allgather_bshd(ring16, out16, all16), "allgather bf16 out")
    global16 = 0_c_int16_t
    call check_ok(rfa_gather_bshd(ring16, out16, global16), "gather bf16 out into zeros")
    whole = int(global16)
    call MPI_Allreduce(MPI_IN_PLACE, whole, size(whole), MPI_INTEGER, MPI_BOR, MPI_COMM_WORLD)
    call check(all(int(all16) == whole), "bf16 allgather: every rank's rows, bit for bit")
    call check_ok(rfa_context_destroy(ring16), "destroy bf16 with sinks")
  end subroutine

  ! This rank's global token positions on a context.
  function positions_of(on) result(where)
    type(rfa_context), intent(in) :: on
    integer(c_int64_t), allocatable :: where(:)
    allocate(where(L))
    call check_ok(rfa_context_get_local_positions(on, where), "local positions")
  end function

  ! Packed documents of one token each (boundaries 0, 1, ..., S through c_loc), no causal mask:
  ! every query sees only its own key, so out is that row of v (of its K/V head) and lse is the
  ! scaled q.k of the row. The array is overwritten after creation: the context keeps a copy.
  ! Then a decreasing list is refused with its message.
  subroutine check_documents()
    type(rfa_context) :: docs_ring, refused
    type(rfa_options) :: od
    integer(c_int64_t), allocatable, target :: bounds(:)
    integer(c_int64_t) :: i, hh
    real(c_float) :: worst_out, worst_lse
    allocate(bounds(S + 1))
    bounds = [(i, i = 0, S)]
    od = opts
    od%mask = RFA_MASK_NONE
    od%heads = H
    od%doc_boundaries = c_loc(bounds)
    od%doc_boundary_count = S + 1
    call check_ok(rfa_context_create(MPI_COMM_WORLD, od, docs_ring), "create with documents")
    bounds = -1
    out = ieee_nan()
    lse = ieee_nan()
    call check_ok(rfa_forward(docs_ring, q, k, v, out, lse), "forward with documents")
    worst_out = 0
    worst_lse = 0
    do hh = 1, H
      worst_out = max(worst_out, maxval(abs(out(:, hh, :, :) - v(:, (hh - 1) / (H / HKV) + 1, :, :))))
      do i = 1, L
        worst_lse = max(worst_lse, maxval(abs(lse(i, hh, :) - sum(q(:, hh, i, :) * k(:, (hh - 1) / (H / HKV) + 1, i, :), &
                                                                  dim=1) / sqrt(real(D, c_float)))))
      end do
    end do
    if (any(ieee_is_nan(out))) worst_out = huge(worst_out)  ! an element left unwritten
    if (any(ieee_is_nan(lse))) worst_lse = huge(worst_lse)
    call check(worst_out < 1.0e-6 .and. worst_lse < 1.0e-5, "documents of one token: out = v, lse = q.k/sqrt(d)")
    call check_ok(rfa_context_destroy(docs_ring), "destroy with documents")
    bounds = [(i, i = 0, S)]
    bounds(3) = 0
    if (rfa_context_create(MPI_COMM_WORLD, od, refused) /= RFA_ERROR_INVALID_ARGUMENT) then
      call fail("decreasing doc_boundaries must be RFA_ERROR_INVALID_ARGUMENT")
    else if (index(rfa_get_last_error_message(), "must never decrease") == 0) then
      call fail("message: " // rfa_get_last_error_message())
    end if
  end subroutine

  ! Per-sequence documents: batch entry 1 holds documents of one token each, entry 2 none (an
  ! empty list through the offsets 0, S + 1, S + 1). Entry 1's out is its rows of v; entry 2's
  ! is that of a context without documents. Offsets that do not end at the boundaries' count
  ! are refused with their message.
  subroutine check_sequence_documents()
    type(rfa_context) :: docs_ring, plain_ring, refused
    type(rfa_options) :: od, plain
    integer(c_int64_t), allocatable, target :: bounds(:)
    integer(c_int64_t), target :: offsets(B + 1)
    real(c_float), allocatable :: plain_out(:,:,:,:), plain_lse(:,:,:)
    integer(c_int64_t) :: i, hh
    real(c_float) :: worst_one, worst_plain
    allocate(bounds(S + 1), plain_out(D, H, L, B), plain_lse(L, H, B))
    bounds = [(i, i = 0, S)]
    offsets = [0_c_int64_t, S + 1, S + 1]
    plain = opts
    plain%mask = RFA_MASK_NONE
    plain%heads = H
    od = plain
    od%doc_boundaries = c_loc(bounds)
    od%doc_boundary_count = S + 1
    od%doc_boundary_offsets = c_loc(offsets)
    od%doc_boundary_offset_count = B + 1
    call check_ok(rfa_context_create(MPI_COMM_WORLD, od, docs_ring), "create with per-sequence documents")
    call check_ok(rfa_context_create(MPI_COMM_WORLD, plain, plain_ring), "create without documents")
    offsets = -1  ! the context keeps its own copy
    call check_ok(rfa_forward(docs_ring, q, k, v, out, lse), "forward with per-sequence documents")
    call check_ok(rfa_forward(plain_ring, q, k, v, plain_out, plain_lse), "forward without documents")
    worst_one = 0
    do hh = 1, H
      worst_one = max(worst_one, maxval(abs(out(:, hh, :, 1) - v(:, (hh - 1) / (H / HKV) + 1, :, 1))))
    end do
    worst_plain = maxval(abs(out(:, :, :, 2) - plain_out(:, :, :, 2)))
    if (any(ieee_is_nan(out))) worst_one = huge(worst_one)  ! an element left unwritten
    call check(worst_one < 1.0e-6 .and. worst_plain == 0, "per-sequence documents: entry 1 out = v, entry 2 unmasked")
    call check_ok(rfa_context_destroy(docs_ring), "destroy with per-sequence documents")
    call check_ok(rfa_context_destroy(plain_ring), "destroy without documents")
    offsets = [0_c_int64_t, S + 1, S]
    if (rfa_context_create(MPI_COMM_WORLD, od, refused) /= RFA_ERROR_INVALID_ARGUMENT) then
      call fail("offsets decreasing at the end must be RFA_ERROR_INVALID_ARGUMENT")
    else if (index(rfa_get_last_error_message(), "doc_boundary_offsets") == 0) then
      call fail("message: " // rfa_get_last_error_message())
    end if
  end subroutine

  ! This rank's out, lse, dq, dk, dv against its shards of the whole reference r_* (scattered
  ! by the library's helper): out within 2e-6, lse within lse_tol, the gradients within 4e-6.
  subroutine compare_to_reference(on, r_out, r_lse, r_dq, r_dk, r_dv, lse_tol, suffix)
    type(rfa_context), intent(in) :: on
    real(c_float), intent(in), target, contiguous :: r_out(:,:,:,:), r_lse(:,:,:), r_dq(:,:,:,:), r_dk(:,:,:,:), &
                                                     r_dv(:,:,:,:)
    real, intent(in) :: lse_tol
    character(*), intent(in) :: suffix
    call check_ok(rfa_scatter_bshd(on, r_out, eout), "scatter reference out"//suffix)
    call check_ok(rfa_scatter_lse(on, r_lse, else_ref), "scatter reference lse"//suffix)
    call check_ok(rfa_scatter_bshd(on, r_dq, edq), "scatter reference dq"//suffix)
    call check_ok(rfa_scatter_bshd(on, r_dk, edk), "scatter reference dk"//suffix)
    call check_ok(rfa_scatter_bshd(on, r_dv, edv), "scatter reference dv"//suffix)
    call check_close(out, eout, 2.0e-6, "out"//suffix)
    call check_close3(lse, else_ref, lse_tol, "lse"//suffix)
    call check_close(dq, edq, 4.0e-6, "dq"//suffix)
    call check_close(dk, edk, 4.0e-6, "dk"//suffix)
    call check_close(dv, edv, 4.0e-6, "dv"//suffix)
  end subroutine

  subroutine check_sinks()
    type(rfa_context) :: sinks_ring
    type(rfa_options) :: os
    real(c_float), target :: sinks(H), dsinks(H)
    real(c_float) :: rdsinks(H), short(H - 1)
    real(c_float), allocatable :: sout(:,:,:,:), slse(:,:,:), sdq(:,:,:,:), sdk(:,:,:,:), sdv(:,:,:,:)
    sinks = [0.5_c_float, -1.0_c_float, 2.0_c_float, 0.0_c_float]
    short = 0
    allocate(sout, mold=rout)
    allocate(slse, mold=rlse)
    allocate(sdq, mold=rdq)
    allocate(sdk, mold=rdk)
    allocate(sdv, mold=rdv)
    call fortran_test_reference_sinks(B, S, H, HKV, D, 1_c_int, sinks, gq, gk, gv, gdo, sout, slse, sdq, sdk, sdv, &
                                      rdsinks)
    os = opts
    os%heads = H
    os%attention_sinks = 1
    call check_ok(rfa_context_create(MPI_COMM_WORLD, os, sinks_ring), "create with sinks")
    call check_ok(rfa_scatter_bshd(sinks_ring, gq, q), "scatter q (sinks)")
    call check_ok(rfa_scatter_bshd(sinks_ring, gk, k), "scatter k (sinks)")
    call check_ok(rfa_scatter_bshd(sinks_ring, gv, v), "scatter v (sinks)")
    call check_ok(rfa_scatter_bshd(sinks_ring, gdo, dout), "scatter dout (sinks)")
    call check_ok(rfa_forward_with_sinks(sinks_ring, q, k, v, sinks, out, lse), "forward with sinks")
    call check_ok(rfa_backward_with_sinks(sinks_ring, q, k, v, out, dout, lse, sinks, dq, dk, dv, dsinks), &
                  "backward with sinks")
    call compare_to_reference(sinks_ring, sout, slse, sdq, sdk, sdv, 4.0e-6, " with sinks")
    call check(maxval(abs(dsinks - rdsinks)) < 1.0e-5 * (1 + maxval(abs(rdsinks))), "dsinks")
    out = ieee_nan()
    dq = ieee_nan()
    dsinks = ieee_nan()
    call check_ok(rfa_forward_with_sinks(sinks_ring, c_loc(q), c_loc(k), c_loc(v), c_loc(sinks), c_loc(out), &
                                         c_loc(lse)), "forward with sinks by address")
    call check_ok(rfa_backward_with_sinks(sinks_ring, c_loc(q), c_loc(k), c_loc(v), c_loc(out), c_loc(dout), &
                                          c_loc(lse), c_loc(sinks), c_loc(dq), c_loc(dk), c_loc(dv), c_loc(dsinks)), &
                  "backward with sinks by address")
    call compare_to_reference(sinks_ring, sout, slse, sdq, sdk, sdv, 4.0e-6, " with sinks by address")
    call check(maxval(abs(dsinks - rdsinks)) < 1.0e-5 * (1 + maxval(abs(rdsinks))), "dsinks by address")
    if (rfa_forward_with_sinks(sinks_ring, q, k, v, short, out, lse) /= RFA_ERROR_INVALID_ARGUMENT) then
      call fail("a sinks array of H - 1 values must be RFA_ERROR_INVALID_ARGUMENT")
    else if (index(rfa_get_last_error_message(), "sinks has shape (3) but this context needs (4)") == 0) then
      call fail("message: " // rfa_get_last_error_message())
    end if
    if (rfa_forward(sinks_ring, q, k, v, out, lse) /= RFA_ERROR_INVALID_USAGE) then
      call fail("rfa_forward on a context with sinks must be RFA_ERROR_INVALID_USAGE")
    end if
    call check_ok(rfa_context_destroy(sinks_ring), "destroy with sinks")
  end subroutine

  ! Scores soft-capped at 0.5 (options%softcap), against the reference with the same cap; a
  ! negative cap refused at creation.
  subroutine check_softcap()
    type(rfa_context) :: capped_ring
    type(rfa_options) :: oc
    real(c_float), allocatable :: cout(:,:,:,:), clse(:,:,:), cdq(:,:,:,:), cdk(:,:,:,:), cdv(:,:,:,:)
    allocate(cout, mold=rout)
    allocate(clse, mold=rlse)
    allocate(cdq, mold=rdq)
    allocate(cdk, mold=rdk)
    allocate(cdv, mold=rdv)
    call fortran_test_reference_softcap(B, S, H, HKV, D, 1_c_int, 0.5_c_double, gq, gk, gv, gdo, cout, clse, cdq, &
                                        cdk, cdv)
    oc = opts
    oc%heads = H
    oc%softcap = 0.5_c_double
    call check_ok(rfa_context_create(MPI_COMM_WORLD, oc, capped_ring), "create with a soft cap")
    call check_ok(rfa_scatter_bshd(capped_ring, gq, q), "scatter q (soft cap)")
    call check_ok(rfa_scatter_bshd(capped_ring, gk, k), "scatter k (soft cap)")
    call check_ok(rfa_scatter_bshd(capped_ring, gv, v), "scatter v (soft cap)")
    call check_ok(rfa_scatter_bshd(capped_ring, gdo, dout), "scatter dout (soft cap)")
    call check_ok(rfa_forward(capped_ring, q, k, v, out, lse), "forward with a soft cap")
    call check_ok(rfa_backward(capped_ring, q, k, v, out, dout, lse, dq, dk, dv), "backward with a soft cap")
    call compare_to_reference(capped_ring, cout, clse, cdq, cdk, cdv, 4.0e-6, " with a soft cap")
    call check_ok(rfa_context_destroy(capped_ring), "destroy with a soft cap")
    oc%softcap = -1.0_c_double
    if (rfa_context_create(MPI_COMM_WORLD, oc, capped_ring) /= RFA_ERROR_INVALID_ARGUMENT) then
      call fail("a negative softcap must be RFA_ERROR_INVALID_ARGUMENT")
    else if (index(rfa_get_last_error_message(), "options.softcap is -1") == 0) then
      call fail("message: " // rfa_get_last_error_message())
    end if
  end subroutine

  ! A value head dim other than head_dim (V, out, dout and dv of DV values): the arrays' first
  ! extent is DV, the sharding helpers take it from the arrays, the results match the reference
  ! with that head dim, and a v of head_dim values is refused with its shape.
  subroutine check_value_head_dim()
    integer(c_int64_t), parameter :: DV = 24
    type(rfa_context) :: mla
    type(rfa_options) :: om
    real(c_float), allocatable :: wv(:,:,:,:), wdo(:,:,:,:), mv(:,:,:,:), mdo(:,:,:,:), mout(:,:,:,:)
    real(c_float), allocatable :: mdv(:,:,:,:), rfull(:,:,:,:), mlse(:,:,:), wdq(:,:,:,:), wdk(:,:,:,:)
    real(c_float), allocatable :: cout(:,:,:,:), clse(:,:,:), cdq(:,:,:,:), cdk(:,:,:,:), cdv(:,:,:,:)
    allocate(wv(DV, HKV, S, B), wdo(DV, H, S, B), mv(DV, HKV, L, B), mdo(DV, H, L, B), mout(DV, H, L, B))
    allocate(mdv(DV, HKV, L, B), rfull(DV, H, S, B), mlse(L, H, B), wdq(D, H, S, B), wdk(D, HKV, S, B))
    allocate(cout(DV, H, S, B), clse(S, H, B), cdq(D, H, S, B), cdk(D, HKV, S, B), cdv(DV, HKV, S, B))
    call fill(wv, 61)
    call fill(wdo, 62)
    call fortran_test_reference_value_dim(B, S, H, HKV, D, DV, 1_c_int, gq, gk, wv, wdo, cout, clse, cdq, cdk, cdv)
    om = opts
    om%heads = H
    om%value_head_dim = DV
    call check_ok(rfa_context_create(MPI_COMM_WORLD, om, mla), "create with a value head dim")
    call check_ok(rfa_scatter_bshd(mla, gq, q), "scatter q (value head dim)")
    call check_ok(rfa_scatter_bshd(mla, gk, k), "scatter k (value head dim)")
    call check_ok(rfa_scatter_bshd(mla, wv, mv), "scatter v of DV values")
    call check_ok(rfa_scatter_bshd(mla, wdo, mdo), "scatter dout of DV values")
    call check_ok(rfa_forward(mla, q, k, mv, mout, mlse), "forward with a value head dim")
    call check_ok(rfa_backward(mla, q, k, mv, mout, mdo, mlse, dq, dk, mdv), "backward with a value head dim")
    call check_ok(rfa_allgather_bshd(mla, mout, rfull), "allgather out of DV values")
    call check_close(rfull, cout, 2.0e-6, "out (value head dim)")
    call check_ok(rfa_allgather_bshd(mla, dq, wdq), "allgather dq (value head dim)")
    call check_close(wdq, cdq, 8.0e-6, "dq (value head dim)")
    call check_ok(rfa_allgather_bshd(mla, dk, wdk), "allgather dk (value head dim)")
    call check_close(wdk, cdk, 8.0e-6, "dk (value head dim)")
    deallocate(rfull)
    allocate(rfull(DV, HKV, S, B))
    call check_ok(rfa_allgather_bshd(mla, mdv, rfull), "allgather dv of DV values")
    call check_close(rfull, cdv, 8.0e-6, "dv (value head dim)")
    if (rfa_forward(mla, q, k, v, mout, mlse) /= RFA_ERROR_INVALID_ARGUMENT) then
      call fail("a v of head_dim values must be RFA_ERROR_INVALID_ARGUMENT")
    else if (index(rfa_get_last_error_message(), "v has shape") == 0) then
      call fail("message: " // rfa_get_last_error_message())
    end if
    call check_ok(rfa_context_destroy(mla), "destroy with a value head dim")
  end subroutine

  ! The balanced layout: the causal problem's chunks dealt by their work; the sharding wrappers
  ! place this rank's rows (not the zigzag ones), and the results are the reference's.
  subroutine check_balanced_layout()
    type(rfa_context) :: balanced
    type(rfa_options) :: ob
    integer(c_int64_t) :: mine(L)
    ob = opts
    ob%layout = RFA_LAYOUT_BALANCED
    call check_ok(rfa_context_create(MPI_COMM_WORLD, ob, balanced), "create balanced")
    call check_ok(rfa_context_get_local_positions(balanced, mine), "balanced local positions")
    call check(all(mine(2:) > mine(:L - 1)), "balanced: rows in position order")
    call run_against_causal_reference(balanced, " (balanced)")
    call check_ok(rfa_context_destroy(balanced), "destroy balanced")
  end subroutine

  ! Scatters the problem by `ctx`'s shards, runs its forward and backward, and compares the
  ! results with the causal reference (`what` names the case in messages).
  subroutine run_against_causal_reference(ctx, what)
    type(rfa_context), intent(in) :: ctx
    character(len=*), intent(in) :: what
    call check_ok(rfa_scatter_bshd(ctx, gq, q), "scatter q" // what)
    call check_ok(rfa_scatter_bshd(ctx, gk, k), "scatter k" // what)
    call check_ok(rfa_scatter_bshd(ctx, gv, v), "scatter v" // what)
    call check_ok(rfa_scatter_bshd(ctx, gdo, dout), "scatter dout" // what)
    call check_ok(rfa_forward(ctx, q, k, v, out, lse), "forward" // what)
    call check_ok(rfa_backward(ctx, q, k, v, out, dout, lse, dq, dk, dv), "backward" // what)
    call compare_to_reference(ctx, rout, rlse, rdq, rdk, rdv, 2.0e-6, what)
  end subroutine

  ! rfa_context_get_options gives back what the ring was created with, and for RFA_STRATEGY_AUTO
  ! the strategy and layout the model chose (never AUTO); a destroyed handle is refused.
  subroutine check_options_read_back()
    type(rfa_options) :: got, automatic
    type(rfa_context) :: chosen, gone
    call check_ok(rfa_context_get_options(ring, got), "get options")
    call check(got%layout == RFA_LAYOUT_ZIGZAG .and. got%mask == RFA_MASK_CAUSAL .and. got%seq_total == S .and. &
               got%batch == B .and. got%heads == H .and. got%kv_heads == HKV .and. got%head_dim == D .and. &
               got%strategy == RFA_STRATEGY_RING, "the options read back are the ring's")
    automatic = opts
    automatic%strategy = RFA_STRATEGY_AUTO
    call check_ok(rfa_context_create(MPI_COMM_WORLD, automatic, chosen), "create with RFA_STRATEGY_AUTO")
    call check_ok(rfa_context_get_options(chosen, got), "get options of the automatic strategy")
    call check(got%strategy /= RFA_STRATEGY_AUTO .and. got%seq_total == S, "RFA_STRATEGY_AUTO reads back its choice")
    call check_ok(rfa_context_destroy(chosen), "destroy the automatic strategy's context")
    call check(rfa_context_get_options(gone, got) /= RFA_SUCCESS, "get options of a context never created fails")
  end subroutine

  ! The needed-only exchange on the causal problem: the same shards, the reference's results.
  subroutine check_needed_exchange()
    type(rfa_context) :: needed
    type(rfa_options) :: on
    on = opts
    on%strategy = RFA_STRATEGY_NEEDED
    call check_ok(rfa_context_create(MPI_COMM_WORLD, on, needed), "create needed-only exchange")
    call run_against_causal_reference(needed, " (needed)")
    call check_ok(rfa_context_destroy(needed), "destroy needed-only exchange")
  end subroutine

  ! A mask given as ranges: the causal mask built as ranges gives the causal context's results
  ! (the reference's), a 2-D neighbourhood builder counts its grid rows, and a reversed range
  ! is refused with its message.
  ! rfa_gather_bshd and rfa_gather_lse put this rank's rows at its positions of the whole
  ! tensor and leave every other row as it was.
  subroutine check_gathers()
    real(c_float), allocatable :: gout(:,:,:,:), glse(:,:,:)
    integer(c_int64_t) :: t
    integer :: i
    logical :: placed, untouched
    allocate(gout(D, H, S, B), glse(S, H, B))
    gout = -1
    glse = -1
    call check_ok(rfa_gather_bshd(ring, out, gout), "gather out")
    call check_ok(rfa_gather_lse(ring, lse, glse), "gather lse")
    placed = .true.
    untouched = .true.
    do t = 0, S - 1
      i = findloc(positions, t, dim=1)
      if (i > 0) then
        placed = placed .and. all(gout(:, :, t + 1, :) == out(:, :, i, :)) .and. all(glse(t + 1, :, :) == lse(i, :, :))
      else
        untouched = untouched .and. all(gout(:, :, t + 1, :) == -1) .and. all(glse(t + 1, :, :) == -1)
      end if
    end do
    call check(placed, "gathered rows at this rank's positions")
    call check(untouched, "the gathers left the other ranks' rows alone")
  end subroutine

  ! The builders that take a flag and a list: the sliding window (causal or two-sided) and the
  ! documents, whose array holds documents + 1 boundaries; then prefix-LM and block-causal masks.
  subroutine check_window_and_document_builders()
    type(rfa_mask_range), allocatable, target :: ranges(:)
    integer(c_int64_t) :: bounds(3)
    call check_ok(rfa_mask_ranges_sliding_window(S, 5_c_int64_t, .true., ranges), "causal window as ranges")
    call check(size(ranges) == 1 .and. ranges(1)%kind == RFA_RANGE_BAND .and. ranges(1)%band_lo == -4 .and. &
               ranges(1)%band_hi == 0, "a causal window of 5: one band from offset -4 to 0")
    call check_ok(rfa_mask_ranges_sliding_window(S, 5_c_int64_t, .false., ranges), "two-sided window as ranges")
    call check(size(ranges) == 1 .and. ranges(1)%band_lo == -4 .and. ranges(1)%band_hi == S, &
               "a window of 5 without the causal mask: offsets from -4 up to S")
    bounds = [0_c_int64_t, 3_c_int64_t, S]
    call check_ok(rfa_mask_ranges_documents(bounds, .true., ranges), "documents as ranges")
    call check(size(ranges) == 2, "two documents, two entries")
    if (size(ranges) == 2) then
      call check(ranges(1)%kind == RFA_RANGE_CAUSAL .and. ranges(1)%q_end == 3 .and. ranges(2)%q_begin == 3 .and. &
                 ranges(2)%k_begin == 3 .and. ranges(2)%q_end == S .and. ranges(2)%k_end == S, &
                 "the documents' entries, causal within each")
    end if
    call check_ok(rfa_mask_ranges_prefix_lm(12_c_int64_t, 5_c_int64_t, ranges), "prefix-LM as ranges")
    call check(size(ranges) == 2, "a prefix-LM mask: two entries")
    if (size(ranges) == 2) then
      call check(ranges(1)%kind == RFA_RANGE_CAUSAL .and. ranges(1)%q_end == 12 .and. ranges(1)%k_end == 12 .and. &
                 ranges(2)%kind == RFA_RANGE_FULL .and. ranges(2)%q_end == 12 .and. ranges(2)%k_begin == 0 .and. &
                 ranges(2)%k_end == 5, "prefix-LM: causal over the sequence, and every query sees the 5-token prefix")
    end if
    call check_ok(rfa_mask_ranges_block_causal(12_c_int64_t, 5_c_int64_t, ranges), "block-causal as ranges")
    call check(size(ranges) == 3, "blocks of 5 over 12 tokens: three entries")
    if (size(ranges) == 3) then
      call check(all(ranges%kind == RFA_RANGE_FULL) .and. all(ranges%q_begin == [0, 5, 10]) .and. &
                 all(ranges%q_end == [5, 10, 12]) .and. all(ranges%k_begin == 0) .and. &
                 all(ranges%k_end == [5, 10, 12]), "block-causal: each block sees itself and the blocks before")
    end if
  end subroutine

  subroutine check_mask_ranges()
    type(rfa_context) :: ranged, refused
    type(rfa_options) :: orr
    type(rfa_mask_range), allocatable, target :: ranges(:), grid(:)
    real(c_float), allocatable :: cout(:,:,:,:), clse(:,:,:), cdq(:,:,:,:), cdk(:,:,:,:), cdv(:,:,:,:)
    allocate(cout, mold=rout)
    allocate(clse, mold=rlse)
    allocate(cdq, mold=rdq)
    allocate(cdk, mold=rdk)
    allocate(cdv, mold=rdv)
    call fortran_test_reference(B, S, H, HKV, D, 1_c_int, gq, gk, gv, gdo, cout, clse, cdq, cdk, cdv)
    call check_ok(rfa_mask_ranges_causal(S, ranges), "causal mask as ranges")
    call check(size(ranges) == 1 .and. ranges(1)%kind == RFA_RANGE_CAUSAL .and. ranges(1)%q_end == S, &
               "one causal entry over the sequence")
    orr = opts
    orr%heads = H
    orr%mask = RFA_MASK_RANGES
    orr%mask_ranges = c_loc(ranges(1))
    orr%mask_range_count = size(ranges, kind=c_int64_t)
    call check_ok(rfa_context_create(MPI_COMM_WORLD, orr, ranged), "create with mask ranges")
    call check_ok(rfa_scatter_bshd(ranged, gq, q), "scatter q (mask ranges)")
    call check_ok(rfa_scatter_bshd(ranged, gk, k), "scatter k (mask ranges)")
    call check_ok(rfa_scatter_bshd(ranged, gv, v), "scatter v (mask ranges)")
    call check_ok(rfa_scatter_bshd(ranged, gdo, dout), "scatter dout (mask ranges)")
    out = ieee_nan()
    lse = ieee_nan()
    dq = ieee_nan()
    dk = ieee_nan()
    dv = ieee_nan()
    call check_ok(rfa_forward(ranged, q, k, v, out, lse), "forward with mask ranges")
    call check_ok(rfa_backward(ranged, q, k, v, out, dout, lse, dq, dk, dv), "backward with mask ranges")
    call compare_to_reference(ranged, cout, clse, cdq, cdk, cdv, 2.0e-6, " (mask ranges)")
    call check_ok(rfa_context_destroy(ranged), "destroy with mask ranges")
    ! 4 x 3 points, radius 1: rows 0 and 2 see two grid rows, row 1 three.
    call check_ok(rfa_mask_ranges_grid_neighbourhood(4_c_int64_t, 3_c_int64_t, 1_c_int64_t, 1_c_int64_t, grid), &
                  "grid neighbourhood")
    call check(size(grid) == 7 .and. grid(1)%kind == RFA_RANGE_BAND .and. grid(1)%band_hi == 1, &
               "the 4 x 3 grid's neighbourhood has 7 entries")
    ranges(1)%q_begin = 3
    ranges(1)%q_end = 2
    if (rfa_context_create(MPI_COMM_WORLD, orr, refused) /= RFA_ERROR_INVALID_ARGUMENT) then
      call fail("a reversed range must be RFA_ERROR_INVALID_ARGUMENT")
    else if (index(rfa_get_last_error_message(), "options.mask_ranges[0].q_end is 2") == 0) then
      call fail("message: " // rfa_get_last_error_message())
    end if
  end subroutine

  subroutine check_constants()
    integer(c_int64_t) :: c(72)
    integer(c_int) :: n
    integer(c_int64_t) :: mine(71)
    character(kind=c_char), pointer :: version(:)
    type(rfa_options), target :: probe
    type(rfa_mask_range), target :: range_probe
    mine = [integer(c_int64_t) :: RFA_SUCCESS, RFA_ERROR_INVALID_ARGUMENT, RFA_ERROR_INVALID_USAGE, &
            RFA_ERROR_UNSUPPORTED, RFA_ERROR_OUT_OF_MEMORY, RFA_ERROR_INTERNAL, RFA_ERROR_MPI, RFA_ERROR_NCCL, &
            RFA_ERROR_CUDA, RFA_ERROR_HWLOC, RFA_ERROR_KOKKOS, RFA_ERROR_VERSION_MISMATCH, RFA_ERROR_TIMEOUT, &
            RFA_ERROR_CALL_MISMATCH, RFA_ERROR_NONFINITE, RFA_VALUE_CHECKS_DEFAULT, RFA_VALUE_CHECKS_OFF, &
            RFA_VALUE_CHECKS_ON, RFA_CUDA_KERNELS_DEFAULT, RFA_CUDA_KERNELS_AUTO, RFA_CUDA_KERNELS_RFA, &
            RFA_CUDA_KERNELS_CUDNN, &
            RFA_DTYPE_FLOAT32, RFA_DTYPE_BFLOAT16, RFA_DTYPE_FLOAT16, RFA_MASK_NONE, RFA_MASK_CAUSAL, &
            RFA_LAYOUT_CONTIGUOUS, RFA_LAYOUT_ZIGZAG, RFA_LAYOUT_STRIPE, RFA_RING_ORDER_DEFAULT, &
            RFA_RING_ORDER_IDENTITY, RFA_RING_ORDER_TOPOLOGY, RFA_RING_ORDER_FILE, RFA_STRATEGY_RING, &
            RFA_STRATEGY_ULYSSES, RFA_STRATEGY_ALLGATHER, RFA_STRATEGY_HYBRID, RFA_STRATEGY_AUTO, RFA_VERSION_MAJOR, &
            RFA_VERSION_MINOR, RFA_VERSION_PATCH, int(RFA_OPTIONS_VERSION, c_int64_t), c_sizeof(probe), &
            byte_offset(probe), byte_offset_head_dim(probe), byte_offset_ulysses_degree(probe), &
            RFA_MASK_RANGES, RFA_RANGE_FULL, RFA_RANGE_CAUSAL, RFA_RANGE_ANTICAUSAL, RFA_RANGE_BAND, &
            c_sizeof(range_probe), &
            transfer(c_loc(range_probe%kind), 0_c_intptr_t) - transfer(c_loc(range_probe), 0_c_intptr_t), &
            transfer(c_loc(probe%mask_ranges), 0_c_intptr_t) - transfer(c_loc(probe), 0_c_intptr_t), &
            transfer(c_loc(probe%value_head_dim), 0_c_intptr_t) - transfer(c_loc(probe), 0_c_intptr_t), &
            RFA_LAYOUT_BALANCED, RFA_STRATEGY_NEEDED, RFA_DEVICE_HOST, RFA_DEVICE_CUDA, RFA_TRANSPORT_DEFAULT, &
            RFA_TRANSPORT_MPI, RFA_TRANSPORT_NCCL, &
            merge(1_c_int64_t, 0_c_int64_t, [RFA_HAVE_CUDA, RFA_HAVE_CUDA_KERNELS, RFA_HAVE_CUDNN, RFA_HAVE_NCCL, &
                                             RFA_HAVE_MPI, RFA_HAVE_HWLOC, RFA_HAVE_FORTRAN]), &
            RFA_VERSION_CODE]
    n = fortran_test_c_constants(c, size(c, kind=c_int))
    call check(n == size(mine), "the C side lists as many constants as the Fortran side")
    call check(all(c(1:size(mine)) == mine), "Fortran constants and rfa_options layout match the C header")
    call c_f_pointer(fortran_test_c_version_string(), version, [len(RFA_VERSION_STRING) + 1])
    call check(transfer(version(1:len(RFA_VERSION_STRING)), RFA_VERSION_STRING) == RFA_VERSION_STRING &
               .and. version(len(RFA_VERSION_STRING) + 1) == c_null_char, "RFA_VERSION_STRING matches the C header's")
    call check_field_offsets()
  end subroutine

  ! Every field of rfa_options and rfa_mask_range at the offset C gives it, by name: two fields of
  ! one size swapped in the Fortran type would keep the sizes and fail here.
  subroutine check_field_offsets()
    type(rfa_options), target :: o
    type(rfa_mask_range), target :: r
    integer(c_int64_t) :: c(40), mine(37)
    integer(c_int) :: n
    integer :: i
    mine = [offset_in(c_loc(o%struct_size), c_loc(o)), offset_in(c_loc(o%version), c_loc(o)), &
            offset_in(c_loc(o%layout), c_loc(o)), offset_in(c_loc(o%mask), c_loc(o)), &
            offset_in(c_loc(o%dtype), c_loc(o)), offset_in(c_loc(o%ring_order), c_loc(o)), &
            offset_in(c_loc(o%softmax_scale), c_loc(o)), offset_in(c_loc(o%batch), c_loc(o)), &
            offset_in(c_loc(o%seq_total), c_loc(o)), offset_in(c_loc(o%heads), c_loc(o)), &
            offset_in(c_loc(o%kv_heads), c_loc(o)), offset_in(c_loc(o%head_dim), c_loc(o)), &
            offset_in(c_loc(o%device), c_loc(o)), offset_in(c_loc(o%transport), c_loc(o)), &
            offset_in(c_loc(o%timeout_s), c_loc(o)), offset_in(c_loc(o%strategy), c_loc(o)), &
            offset_in(c_loc(o%ulysses_degree), c_loc(o)), offset_in(c_loc(o%window), c_loc(o)), &
            offset_in(c_loc(o%doc_boundaries), c_loc(o)), offset_in(c_loc(o%doc_boundary_count), c_loc(o)), &
            offset_in(c_loc(o%check_values), c_loc(o)), offset_in(c_loc(o%cuda_kernels), c_loc(o)), &
            offset_in(c_loc(o%deterministic), c_loc(o)), offset_in(c_loc(o%attention_sinks), c_loc(o)), &
            offset_in(c_loc(o%softcap), c_loc(o)), offset_in(c_loc(o%mask_ranges), c_loc(o)), &
            offset_in(c_loc(o%mask_range_count), c_loc(o)), &
            offset_in(c_loc(o%doc_boundary_offsets), c_loc(o)), &
            offset_in(c_loc(o%doc_boundary_offset_count), c_loc(o)), &
            offset_in(c_loc(o%value_head_dim), c_loc(o)), offset_in(c_loc(r%q_begin), c_loc(r)), &
            offset_in(c_loc(r%q_end), c_loc(r)), offset_in(c_loc(r%k_begin), c_loc(r)), &
            offset_in(c_loc(r%k_end), c_loc(r)), offset_in(c_loc(r%band_lo), c_loc(r)), &
            offset_in(c_loc(r%band_hi), c_loc(r)), offset_in(c_loc(r%kind), c_loc(r))]
    n = fortran_test_c_field_offsets(c, size(c, kind=c_int))
    call check(n == size(mine), "the C side lists as many field offsets as the Fortran side")
    do i = 1, min(int(n), size(mine))
      if (c(i) /= mine(i)) then
        write (*, '(a, i0, a, i0, a, i0)') "field ", i, ": C offset ", c(i), ", Fortran ", mine(i)
        call fail("a field of rfa_options or rfa_mask_range is not where C has it")
      end if
    end do
  end subroutine

  ! The bytes from `base` to `field`.
  integer(c_int64_t) function offset_in(field, base)
    type(c_ptr), intent(in) :: field, base
    offset_in = transfer(field, 0_c_intptr_t) - transfer(base, 0_c_intptr_t)
  end function

  ! The address forms of rfa_forward and rfa_backward (c_loc of host arrays on a host context)
  ! against the reference; on a host context rfa_context_synchronize does nothing and
  ! rfa_context_set_stream is refused, in both its forms; the linked library's version.
  subroutine check_addresses_streams_and_version()
    integer :: major, minor, patch
    out = ieee_nan()
    lse = ieee_nan()
    dq = ieee_nan()
    dk = ieee_nan()
    dv = ieee_nan()
    call check_ok(rfa_forward(ring, c_loc(q), c_loc(k), c_loc(v), c_loc(out), c_loc(lse)), "forward by address")
    call check_ok(rfa_backward(ring, c_loc(q), c_loc(k), c_loc(v), c_loc(out), c_loc(dout), c_loc(lse), c_loc(dq), &
                               c_loc(dk), c_loc(dv)), "backward by address")
    call compare_to_reference(ring, rout, rlse, rdq, rdk, rdv, 2.0e-6, " by address")
    call check_ok(rfa_context_synchronize(ring), "synchronize a host context")
    if (rfa_context_set_stream(ring, c_null_ptr) /= RFA_ERROR_INVALID_USAGE) then
      call fail("a stream handed to a host context must be RFA_ERROR_INVALID_USAGE")
    end if
    if (rfa_context_set_stream(ring, 0_c_intptr_t) /= RFA_ERROR_INVALID_USAGE) then
      call fail("a stream handle handed to a host context must be RFA_ERROR_INVALID_USAGE")
    end if
    call check_ok(rfa_get_version(major, minor, patch), "version")
    call check(major == RFA_VERSION_MAJOR .and. minor == RFA_VERSION_MINOR .and. patch == RFA_VERSION_PATCH, &
               "the linked library's version is the module's")
    minor = -1
    call check_ok(rfa_get_version(minor=minor), "the minor version alone")
    call check(minor == RFA_VERSION_MINOR, "the minor version alone is the module's")
    call check_ok(rfa_get_version(), "the version with no part asked")
  end subroutine

  integer(c_int64_t) function byte_offset(o)
    type(rfa_options), target, intent(in) :: o
    byte_offset = transfer(c_loc(o%softmax_scale), 0_c_intptr_t) - transfer(c_loc(o), 0_c_intptr_t)
  end function

  integer(c_int64_t) function byte_offset_ulysses_degree(o)
    type(rfa_options), target, intent(in) :: o
    byte_offset_ulysses_degree = transfer(c_loc(o%ulysses_degree), 0_c_intptr_t) - transfer(c_loc(o), 0_c_intptr_t)
  end function

  integer(c_int64_t) function byte_offset_head_dim(o)
    type(rfa_options), target, intent(in) :: o
    byte_offset_head_dim = transfer(c_loc(o%head_dim), 0_c_intptr_t) - transfer(c_loc(o), 0_c_intptr_t)
  end function

end program fortran_api_test
