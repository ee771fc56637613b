// SPDX-License-Identifier: BSD-3-Clause
// Whether every rank of MPI_COMM_WORLD sees a CUDA device, agreed so that the GPU suites skip
// on every rank together (and say why) on machines without one. Collective.
#pragma once

#include <cuda_runtime_api.h>
#include <mpi.h>

#include <string>

namespace rfa_test {

/// "" when every rank sees a CUDA device, else why not.
inline std::string why_no_cuda_device() {
  int count = 0;
  const cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess) cudaGetLastError();
  int ok = rc == cudaSuccess && count > 0 ? 1 : 0, all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (all) return "";
  return rc != cudaSuccess ? std::string("no usable CUDA device on some rank (") + cudaGetErrorName(rc) + ")"
                           : "no CUDA device on some rank";
}

}  // namespace rfa_test
