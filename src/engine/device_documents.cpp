// SPDX-License-Identifier: BSD-3-Clause
#include "engine/device_documents.hpp"

#if RFA_ENGINE_CUDA

#include <exception>
#include <vector>

#include "comm/agreement.hpp"
#include "core/error.hpp"

namespace rfa {
namespace engine {
namespace {

/// `values` in a device View (empty for none); a failure is thrown naming `what`.
Kokkos::View<std::int64_t*, Kokkos::CudaSpace> device_copy(const std::vector<std::int64_t>& values, const char* label,
                                                           const char* what) {
  Kokkos::View<std::int64_t*, Kokkos::CudaSpace> copy;
  if (values.empty()) return copy;
  try {
    copy = Kokkos::View<std::int64_t*, Kokkos::CudaSpace>(Kokkos::view_alloc(Kokkos::WithoutInitializing, label),
                                                          values.size());
    Kokkos::deep_copy(copy, Kokkos::View<const std::int64_t*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(
                                values.data(), values.size()));
  } catch (const std::exception& e) {  // Kokkos reports allocation and copy failures so
    fail(RFA_ERROR_CUDA, "copying the ", values.size(), " ", what, " to the device failed: ", e.what());
  }
  return copy;
}

}  // namespace

DeviceDocuments copy_documents_to_device(comm::Communicator& agreement, const AttentionConfig& c) {
  DeviceDocuments copy;
  if (c.doc_bounds.empty() && c.doc_offsets.empty()) return copy;
  comm::check_everywhere(agreement, [&] {
    copy.bounds = device_copy(c.doc_bounds, "rfa::doc_bounds", "document boundaries");
    copy.offsets = device_copy(c.doc_offsets, "rfa::doc_offsets", "per-sequence document offsets");
  });
  return copy;
}

}  // namespace engine
}  // namespace rfa

#endif  // RFA_ENGINE_CUDA
