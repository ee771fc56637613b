// SPDX-License-Identifier: BSD-3-Clause
// Whether every rank of MPI_COMM_WORLD sees a CUDA device, agreed so that the GPU suites skip
// on every rank together (and say why) on machines without one. Collective. On a GPU machine,
// where a skip would read as a pass, RFA_TEST_REQUIRE_DEVICE=1 (scripts/gpu/device_check.sh
// sets it) makes them fail instead.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdlib>
#include <cstring>
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

/// Whether the environment asks that a missing device fail the GPU suites instead of skipping
/// them (RFA_TEST_REQUIRE_DEVICE=1).
inline bool device_required() {
  const char* value = std::getenv("RFA_TEST_REQUIRE_DEVICE");
  return value != nullptr && std::strcmp(value, "1") == 0;
}

}  // namespace rfa_test

/// In a test or its SetUp, given why no device is usable ("" when one is): skips, or fails where
/// the device is required (rfa_test::device_required()).
#define RFA_TEST_NEEDS_DEVICE(why)                                                           \
  do {                                                                                       \
    const std::string why_not_ = (why);                                                      \
    if (!why_not_.empty()) {                                                                 \
      if (rfa_test::device_required()) FAIL() << why_not_ << " (RFA_TEST_REQUIRE_DEVICE=1)"; \
      GTEST_SKIP() << why_not_ << ": nothing to test";                                       \
    }                                                                                        \
  } while (0)
