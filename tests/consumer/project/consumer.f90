! A minimal Fortran application built against the installed rfa module.
program consumer_fortran
  use, intrinsic :: iso_c_binding
  use mpi_f08
  use rfa
  implicit none
  type(rfa_options) :: o
  type(rfa_context) :: ring
  integer(c_int64_t) :: L
  real(c_float), allocatable, target :: q(:,:,:,:), out(:,:,:,:), lse(:,:,:)
  integer(c_int) :: ierr
  call MPI_Init()
  ierr = rfa_options_init(o)
  o%dtype = RFA_DTYPE_FLOAT32
  o%seq_total = 64
  o%heads = 2
  o%kv_heads = 2
  o%head_dim = 8
  if (ierr == RFA_SUCCESS) ierr = rfa_context_create(MPI_COMM_WORLD, o, ring)
  if (ierr == RFA_SUCCESS) ierr = rfa_context_get_local_seq(ring, L)
  if (ierr == RFA_SUCCESS) then
    allocate(q(8, 2, L, 1), out(8, 2, L, 1), lse(L, 2, 1))
    q = 0.25
    ierr = rfa_forward(ring, q, q, q, out, lse)
  end if
  if (ierr == RFA_SUCCESS) ierr = rfa_context_destroy(ring)
  if (ierr /= RFA_SUCCESS) print *, "consumer_fortran: ", rfa_get_last_error_message()
  call MPI_Finalize()
  if (ierr /= RFA_SUCCESS) error stop 1
end program consumer_fortran
