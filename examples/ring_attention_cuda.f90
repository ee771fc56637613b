! SPDX-License-Identifier: BSD-3-Clause
!> Ring attention on GPUs from Fortran: run with  mpiexec -n 2 ./rfa_example_cuda_fortran
!>
!> The tensors live in GPU memory; rfa takes their addresses as type(c_ptr). This program is
!> plain Fortran 2008: it allocates device memory through the CUDA runtime's C functions
!> (bind(c) interfaces below). With CUDA Fortran (nvfortran), pass c_devloc(array)%cptr of
!> your `device` arrays instead (c_devloc's type(c_devptr) holds the type(c_ptr) in cptr), and your stream as integer(cuda_stream_kind).
!> Needs rfa built against a CUDA-enabled Kokkos; exits with 77 (skipped) without a GPU.
program ring_attention_cuda
  use, intrinsic :: iso_c_binding
  use mpi_f08
  use rfa
  implicit none

  interface
    integer(c_int) function cudaGetDeviceCount(n) bind(c, name="cudaGetDeviceCount")
      import :: c_int
      integer(c_int), intent(out) :: n
    end function
    integer(c_int) function cudaSetDevice(device) bind(c, name="cudaSetDevice")
      import :: c_int
      integer(c_int), value :: device
    end function
    integer(c_int) function cudaMalloc(pointer, bytes) bind(c, name="cudaMalloc")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), intent(out) :: pointer
      integer(c_size_t), value :: bytes
    end function
    integer(c_int) function cudaFree(pointer) bind(c, name="cudaFree")
      import :: c_int, c_ptr
      type(c_ptr), value :: pointer
    end function
    integer(c_int) function cudaMemcpy(destination, source, bytes, kind) bind(c, name="cudaMemcpy")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: destination, source
      integer(c_size_t), value :: bytes
      integer(c_int), value :: kind
    end function
    integer(c_int) function cudaStreamCreate(stream) bind(c, name="cudaStreamCreate")
      import :: c_int, c_ptr
      type(c_ptr), intent(out) :: stream
    end function
    integer(c_int) function cudaStreamSynchronize(stream) bind(c, name="cudaStreamSynchronize")
      import :: c_int, c_ptr
      type(c_ptr), value :: stream
    end function
    integer(c_int) function cudaStreamDestroy(stream) bind(c, name="cudaStreamDestroy")
      import :: c_int, c_ptr
      type(c_ptr), value :: stream
    end function
  end interface
  integer(c_int), parameter :: host_to_device = 1, device_to_host = 2

  integer, parameter :: H = 8, HKV = 2, D = 128
  type(rfa_options) :: o
  type(rfa_context) :: ring
  type(c_ptr) :: stream, q, k, v, dout, out, lse, dq, dk, dv
  integer(c_int) :: devices
  integer :: rank, missing, i
  integer(c_int64_t) :: L
  integer(c_int64_t), allocatable :: positions(:)
  integer(c_int16_t), allocatable, target :: first(:)
  real :: norm

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  missing = 0
  if (cudaGetDeviceCount(devices) /= 0) missing = 1
  if (missing == 0 .and. devices == 0) missing = 1
  call MPI_Allreduce(MPI_IN_PLACE, missing, 1, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD)
  if (missing /= 0) then
    if (rank == 0) print '(a)', 'no CUDA device on some rank: nothing to run'
    call MPI_Finalize()
    stop 77
  end if
  call cuda_check(cudaSetDevice(int(mod(rank, devices), c_int)), 'cudaSetDevice')

  call check(rfa_options_init(o))
  o%device = RFA_DEVICE_CUDA
  o%layout = RFA_LAYOUT_ZIGZAG
  o%mask = RFA_MASK_CAUSAL
  o%dtype = RFA_DTYPE_BFLOAT16
  o%seq_total = 8192
  o%heads = H
  o%kv_heads = HKV
  o%head_dim = D
  call check(rfa_context_create(MPI_COMM_WORLD, o, ring))
  call cuda_check(cudaStreamCreate(stream), 'cudaStreamCreate')
  call check(rfa_context_set_stream(ring, stream))

  call check(rfa_context_get_local_seq(ring, L))
  allocate(positions(L))
  call check(rfa_context_get_local_positions(ring, positions))
  q = device_tensor(H, 0.0)
  k = device_tensor(HKV, 1.0)
  v = device_tensor(HKV, 2.0)
  dout = device_tensor(H, 3.0)
  out = device_buffer(int(D * H, c_size_t) * L * 2)
  dq = device_buffer(int(D * H, c_size_t) * L * 2)
  dk = device_buffer(int(D * HKV, c_size_t) * L * 2)
  dv = device_buffer(int(D * HKV, c_size_t) * L * 2)
  lse = device_buffer(int(H, c_size_t) * L * 4)

  call check(rfa_forward(ring, q, k, v, out, lse))   ! collective; returns once queued
  call check(rfa_backward(ring, q, k, v, out, dout, lse, dq, dk, dv))
  call cuda_check(cudaStreamSynchronize(stream), 'cudaStreamSynchronize')

  allocate(first(D))
  call cuda_check(cudaMemcpy(c_loc(first), out, int(D * 2, c_size_t), device_to_host), 'cudaMemcpy')
  norm = 0
  do i = 1, D
    norm = norm + from_bf16(first(i))**2
  end do
  print '(a,i0,a,i0,a,i0,a,f8.4)', 'rank ', rank, ': ', L, ' tokens from position ', positions(1), &
      '; |out| of its first token, head 0: ', sqrt(norm)

  call check(rfa_context_destroy(ring))
  call cuda_check(cudaFree(q), 'cudaFree')
  call cuda_check(cudaFree(k), 'cudaFree')
  call cuda_check(cudaFree(v), 'cudaFree')
  call cuda_check(cudaFree(dout), 'cudaFree')
  call cuda_check(cudaFree(out), 'cudaFree')
  call cuda_check(cudaFree(dq), 'cudaFree')
  call cuda_check(cudaFree(dk), 'cudaFree')
  call cuda_check(cudaFree(dv), 'cudaFree')
  call cuda_check(cudaFree(lse), 'cudaFree')
  call cuda_check(cudaStreamDestroy(stream), 'cudaStreamDestroy')
  call check(rfa_finalize())
  call MPI_Finalize()

contains

  subroutine check(status)
    integer(c_int), intent(in) :: status
    if (status /= RFA_SUCCESS) then
      print '(a)', 'rfa failed: '//rfa_get_error_string(status)//': '//rfa_get_last_error_message()
      call MPI_Abort(MPI_COMM_WORLD, 1)
    end if
  end subroutine

  subroutine cuda_check(status, what)
    integer(c_int), intent(in) :: status
    character(*), intent(in) :: what
    if (status /= 0) then
      print '(a,i0)', what//' failed with CUDA error ', status
      call MPI_Abort(MPI_COMM_WORLD, 1)
    end if
  end subroutine

  type(c_ptr) function device_buffer(bytes) result(p)
    integer(c_size_t), intent(in) :: bytes
    call cuda_check(cudaMalloc(p, bytes), 'cudaMalloc')
  end function

  ! x(d, heads, L) for this rank's tokens, as bf16 bit patterns, copied to a new device buffer.
  type(c_ptr) function device_tensor(heads, phase) result(p)
    integer, intent(in) :: heads
    real, intent(in) :: phase
    integer(c_int16_t), allocatable, target :: x(:,:,:)
    integer(c_int64_t) :: t
    integer :: hh, c
    allocate(x(D, heads, L))
    do t = 1, L
      do hh = 1, heads
        do c = 1, D
          x(c, hh, t) = to_bf16(sin(0.05 * real(positions(t)) + 0.3 * real(hh - 1) + 0.7 * real(c - 1) + phase))
        end do
      end do
    end do
    p = device_buffer(int(size(x), c_size_t) * 2)
    call cuda_check(cudaMemcpy(p, c_loc(x), int(size(x), c_size_t) * 2, host_to_device), 'cudaMemcpy')
  end function

  ! bf16 is the upper half of an IEEE single, rounded to nearest even (little-endian host).
  integer(c_int16_t) function to_bf16(x) result(h)
    real(c_float), intent(in) :: x
    integer(c_int32_t) :: u
    u = transfer(x, u)
    u = u + 32767 + iand(ishft(u, -16), 1)
    h = transfer(ishft(u, -16), h)
  end function

  real(c_float) function from_bf16(h) result(x)
    integer(c_int16_t), intent(in) :: h
    x = transfer(ishft(int(h, c_int32_t), 16), x)
  end function
end program ring_attention_cuda
