// SPDX-License-Identifier: BSD-3-Clause
#include "device/current_device.hpp"

#include <cuda_runtime_api.h>

#include "core/error.hpp"
#include "device/cuda_error.hpp"

namespace rfa::device {

int require_device_count() {
  int count = 0;
  const cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess || count == 0) {
    cudaGetLastError();
    fail(RFA_ERROR_CUDA, "no usable CUDA device: ",
         rc != cudaSuccess ? cuda_error_message(rc, "cudaGetDeviceCount")
                           : std::string("cudaGetDeviceCount found 0 devices"),
         " (is there a GPU, a driver, and does CUDA_VISIBLE_DEVICES leave one visible?)");
  }
  return count;
}

int require_current_device() {
  require_device_count();
  int device = 0;
  check_cuda(cudaGetDevice(&device), "cudaGetDevice");
  return device;
}

std::string current_device_pci_bus_id() {
  const int device = require_current_device();
  char bus_id[32] = {};  // "dddd:bb:dd.f" needs 13 with the terminator
  check_cuda(cudaDeviceGetPCIBusId(bus_id, int(sizeof bus_id), device), "cudaDeviceGetPCIBusId");
  return bus_id;
}

std::string current_device_pci_bus_id_or_empty() {
  try {
    return current_device_pci_bus_id();
  } catch (const Error&) {
    return "";
  }
}

bool is_device_memory(const void* pointer) {
  if (pointer == nullptr) return false;
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, pointer) != cudaSuccess) {
    cudaGetLastError();  // an unknown pointer is an answer here, not an error to keep
    return false;
  }
  return attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged;
}

PointerPlace pointer_place(const void* pointer) {
  PointerPlace place;
  if (pointer == nullptr) return place;
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, pointer) != cudaSuccess) {
    cudaGetLastError();
    return place;
  }
  if (attributes.type == cudaMemoryTypeDevice) {
    place.kind = PointerPlace::Kind::device;
    place.device = attributes.device;
  } else if (attributes.type == cudaMemoryTypeManaged) {
    place.kind = PointerPlace::Kind::managed;
  }
  return place;
}

}  // namespace rfa::device
