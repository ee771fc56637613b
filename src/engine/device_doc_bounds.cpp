// SPDX-License-Identifier: BSD-3-Clause
#include "engine/device_doc_bounds.hpp"

#if RFA_ENGINE_CUDA

#include <exception>

#include "comm/agreement.hpp"
#include "core/error.hpp"

namespace rfa {
namespace engine {

Kokkos::View<std::int64_t*, Kokkos::CudaSpace> copy_doc_bounds_to_device(comm::Communicator& agreement,
                                                                         const std::vector<std::int64_t>& bounds) {
  Kokkos::View<std::int64_t*, Kokkos::CudaSpace> copy;
  if (bounds.empty()) return copy;
  comm::check_everywhere(agreement, [&] {
    try {
      copy = Kokkos::View<std::int64_t*, Kokkos::CudaSpace>(
          Kokkos::view_alloc(Kokkos::WithoutInitializing, "rfa::doc_bounds"), bounds.size());
      Kokkos::deep_copy(copy, Kokkos::View<const std::int64_t*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(
                                  bounds.data(), bounds.size()));
    } catch (const std::exception& e) {  // Kokkos reports allocation and copy failures so
      fail(RFA_ERROR_CUDA, "copying the ", bounds.size(), " document boundaries to the device failed: ", e.what());
    }
  });
  return copy;
}

}  // namespace engine
}  // namespace rfa

#endif  // RFA_ENGINE_CUDA
