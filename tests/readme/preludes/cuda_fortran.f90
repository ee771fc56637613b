! SPDX-License-Identifier: BSD-3-Clause
! Wraps docs/gpus.md's CUDA Fortran fragment: what it assumes exists (docs/architecture.md §7).
subroutine readme_cuda_fragment(o, ring, stream, q, k, v, out, dout, lse, dq, dk, dv)
  use, intrinsic :: iso_c_binding
  use mpi_f08
  use rfa
  implicit none
  type(rfa_options), intent(inout) :: o
  type(rfa_context), intent(inout) :: ring
  type(c_ptr), intent(in) :: stream, q, k, v, out, dout, lse, dq, dk, dv
@FRAGMENT@
contains
  subroutine check(status)
    integer(c_int), intent(in) :: status
    if (status /= RFA_SUCCESS) call MPI_Abort(MPI_COMM_WORLD, 1)
  end subroutine
end subroutine readme_cuda_fragment
