// SPDX-License-Identifier: BSD-3-Clause
#include "device/select_device.hpp"

#include <cuda_runtime_api.h>

#include "collective/node_rank.hpp"
#include "device/cuda_error.hpp"
#include "device/current_device.hpp"

namespace rfa::device {

int select_device_by_local_rank(MPI_Comm comm) {
  const int local = collective::node_local_rank(comm);  // collective: before anything may throw
  const int device = local % require_device_count();
  check_cuda(cudaSetDevice(device), "cudaSetDevice");
  return device;
}

}  // namespace rfa::device
