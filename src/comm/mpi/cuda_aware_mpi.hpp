// SPDX-License-Identifier: BSD-3-Clause
// Whether the MPI library can move device memory itself (CUDA-aware MPI), asked at run time:
// a library built with CUDA support may still run without it (Open MPI: when its CUDA
// component is disabled or the job has no GPU).
#pragma once

namespace rfa::comm {

/// True when mpi-ext.h declares MPIX_Query_cuda_support and it answers 1 now. False when the
/// library offers no such query (then rfa stages device buffers through host memory).
/// RFA_MPI_CUDA_AWARE=0 forces false (to test or work around a broken CUDA-aware MPI).
bool mpi_is_cuda_aware();

}  // namespace rfa::comm
