// SPDX-License-Identifier: BSD-3-Clause
// What the NCCL tests need around CUDA: whether every rank can run them (agreed across ranks,
// so all skip or none), and device buffers filled from / read back to host byte vectors.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstddef>
#include <string>
#include <vector>

namespace rfa::comm::testing {

/// "" when every rank of MPI_COMM_WORLD sees a CUDA device of its own (node-local rank <
/// device count: NCCL refuses two ranks on one GPU); otherwise why not. Collective.
inline std::string why_no_device_for_every_rank() {
  int count = 0;
  const cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess) {
    cudaGetLastError();
    count = 0;
  }
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int local = 0;
  MPI_Comm_rank(node, &local);
  MPI_Comm_free(&node);
  int ok = local < count ? 1 : 0;
  int all_ok = 0;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (all_ok) return "";
  return rc != cudaSuccess ? std::string("no CUDA device (") + cudaGetErrorName(rc) + ")"
                           : "fewer CUDA devices on a node than ranks (or none)";
}

/// Device memory of a fixed size (the test fails on allocation errors).
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
    EXPECT_EQ(cudaMalloc(&data_, bytes == 0 ? 1 : bytes), cudaSuccess);
  }
  ~DeviceBuffer() { cudaFree(data_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* get() const { return data_; }
  unsigned char* bytes() const { return static_cast<unsigned char*>(data_); }
  void upload(const std::vector<unsigned char>& host) {
    ASSERT_EQ(host.size(), bytes_);
    ASSERT_EQ(cudaMemcpy(data_, host.data(), bytes_, cudaMemcpyHostToDevice), cudaSuccess);
  }
  /// Fills with 0xEE: patterns vary with the offset, so a block never written cannot match.
  void poison() { ASSERT_EQ(cudaMemset(data_, 0xEE, bytes_), cudaSuccess); }
  std::vector<unsigned char> download() const {
    std::vector<unsigned char> host(bytes_);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(host.data(), data_, bytes_, cudaMemcpyDeviceToHost), cudaSuccess);
    return host;
  }

 private:
  void* data_ = nullptr;
  std::size_t bytes_;
};

}  // namespace rfa::comm::testing
