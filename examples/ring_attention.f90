! SPDX-License-Identifier: BSD-3-Clause
! Ring attention from Fortran: run with  mpiexec -n 2 ./rfa_example_fortran
!
! Each rank owns a slice of one long sequence. It asks rfa which global token positions it
! must hold, fills its slice of Q, K and V for exactly those tokens, and calls rfa_forward
! and rfa_backward: every rank gets the exact attention output for its own queries over the
! whole sequence, and the gradients for its own Q, K and V.
!
! Arrays are column-major (d, heads, tokens, batch), which is rfa's row-major bshd layout.
program ring_attention_example
  use, intrinsic :: iso_c_binding
  use mpi_f08
  use rfa
  implicit none

  type(rfa_options) :: options
  type(rfa_context) :: ring
  integer :: rank, ring_position, ranks
  integer(c_int64_t) :: L, i, h, c
  real(c_float), allocatable, target :: q(:,:,:,:), k(:,:,:,:), v(:,:,:,:), out(:,:,:,:), dout(:,:,:,:)
  real(c_float), allocatable, target :: dq(:,:,:,:), dk(:,:,:,:), dv(:,:,:,:), lse(:,:,:)
  integer(c_int64_t), allocatable :: positions(:)
  real(c_double) :: local_sum, total_sum

  ! rfa never initializes MPI: the application does.
  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call check(rfa_check_version(), "rfa_check_version")

  ! Describe the problem: defaults first, then the fields that matter.
  call check(rfa_options_init(options), "rfa_options_init")
  options%layout = RFA_LAYOUT_ZIGZAG      ! balances causal work over the ranks
  options%mask = RFA_MASK_CAUSAL
  options%dtype = RFA_DTYPE_FLOAT32
  options%batch = 1
  options%seq_total = 1024                ! the whole sequence: a multiple of 2 * ranks
  options%heads = 8
  options%kv_heads = 2                    ! grouped-query attention
  options%head_dim = 64

  ! Collective. MPI_COMM_WORLD is a type(MPI_Comm); an integer communicator from the old
  ! `mpi` module works through the same generic name. Shard by the ring position, which
  ! may differ from the MPI rank when the ring follows the hardware topology.
  call check(rfa_context_create(MPI_COMM_WORLD, options, ring), "rfa_context_create")
  call check(rfa_context_get_position(ring, ring_position), "get_position")
  call check(rfa_context_get_ranks(ring, ranks), "get_ranks")
  call check(rfa_context_get_local_seq(ring, L), "get_local_seq")

  associate (B => options%batch, NH => options%heads, NKV => options%kv_heads, D => options%head_dim)
    allocate(q(D, NH, L, B), out(D, NH, L, B), dout(D, NH, L, B), dq(D, NH, L, B), lse(L, NH, B))
    allocate(k(D, NKV, L, B), v(D, NKV, L, B), dk(D, NKV, L, B), dv(D, NKV, L, B))
    allocate(positions(L))
    ! positions(i): the 0-based global token held in local row i.
    call check(rfa_context_get_local_positions(ring, positions), "get_local_positions")
    do i = 1, L
      do h = 1, NH
        do c = 1, D
          q(c, h, i, :) = token_value(positions(i), h, c, 0.0)
        end do
      end do
      do h = 1, NKV
        do c = 1, D
          k(c, h, i, :) = token_value(positions(i), h, c, 1.0)
          v(c, h, i, :) = token_value(positions(i), h, c, 2.0)
        end do
      end do
    end do
    dout = 1.0 / real(NH * D, c_float)    ! the gradient of the mean of out

    ! Collective: K/V blocks travel around the ring while each rank computes.
    call check(rfa_forward(ring, q, k, v, out, lse), "rfa_forward")
    call check(rfa_backward(ring, q, k, v, out, dout, lse, dq, dk, dv), "rfa_backward")

    local_sum = sum(real(out, c_double))
    call MPI_Allreduce(local_sum, total_sum, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD)
    print '(a, i0, a, i0, a, i0, a, i0, a, i0, a, f10.6)', "rank ", rank, ": ring position ", ring_position, &
      " of ", ranks, ", first and last token ", positions(1), ", ", positions(L), ", dq(1,1,1,1) = ", dq(1, 1, 1, 1)
    if (rank == 0) print '(a, f10.6)', "mean of out over the whole sequence: ", &
      total_sum / real(B * options%seq_total * NH * D, c_double)
  end associate

  ! Collective, before MPI_Finalize; then let rfa finalize the Kokkos it initialized.
  call check(rfa_context_destroy(ring), "rfa_context_destroy")
  call check(rfa_finalize(), "rfa_finalize")
  call MPI_Finalize()

contains

  !> Stops every rank if an rfa call failed, with the library's detailed message.
  subroutine check(status, what)
    integer(c_int), intent(in) :: status
    character(len=*), intent(in) :: what
    if (status /= RFA_SUCCESS) then
      print '(a, a, a, a, a)', what, " failed: ", rfa_get_error_string(status), ": ", rfa_get_last_error_message()
      call MPI_Abort(MPI_COMM_WORLD, 1)
    end if
  end subroutine

  !> A smooth made-up input of (global position, head, channel): any rank can compute its tokens.
  real(c_float) function token_value(position, head, channel, phase)
    integer(c_int64_t), intent(in) :: position, head, channel
    real, intent(in) :: phase
    token_value = real(sin(0.05d0 * position + 0.3d0 * (head - 1) + 0.7d0 * (channel - 1) + phase), c_float)
  end function

end program ring_attention_example
