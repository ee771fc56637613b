// SPDX-License-Identifier: BSD-3-Clause
#include "engine/device_mask_data.hpp"

#if RFA_ENGINE_CUDA

#include <exception>
#include <string>
#include <vector>

#include "comm/agreement.hpp"
#include "core/error.hpp"

namespace rfa {
namespace engine {
namespace {

using DeviceArray = Kokkos::View<std::int64_t*, Kokkos::CudaSpace>;

/// `count` values at `values` in a device View (empty for none); a failure is thrown naming `what`.
DeviceArray device_copy(const std::int64_t* values, std::size_t count, const char* label, const char* what) {
  DeviceArray copy;
  if (count == 0) return copy;
  try {
    // The label as a std::string: Kokkos takes a bare pointer argument for memory to wrap.
    copy = DeviceArray(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(label)), count);
    Kokkos::deep_copy(copy,
                      Kokkos::View<const std::int64_t*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(values, count));
  } catch (const std::exception& e) {  // Kokkos reports allocation and copy failures so
    fail(RFA_ERROR_CUDA, "copying the ", count, " ", what, " to the device failed: ", e.what());
  }
  return copy;
}

const std::int64_t* data_or_null(const DeviceArray& a) { return a.size() == 0 ? nullptr : a.data(); }

}  // namespace

DeviceMaskPointers DeviceMaskData::pointers() const {
  return {data_or_null(doc_bounds),     data_or_null(doc_offsets),       data_or_null(range_band_begin),
          data_or_null(range_band_end), data_or_null(range_band_offset), data_or_null(range_entries)};
}

DeviceMaskData copy_mask_to_device(comm::Communicator& agreement, const AttentionConfig& c) {
  DeviceMaskData copy;
  if (c.doc_bounds.empty() && c.doc_offsets.empty() && !c.ranges) return copy;
  comm::check_everywhere(agreement, [&] {
    copy.doc_bounds = device_copy(c.doc_bounds.data(), c.doc_bounds.size(), "rfa::doc_bounds", "document boundaries");
    copy.doc_offsets =
        device_copy(c.doc_offsets.data(), c.doc_offsets.size(), "rfa::doc_offsets", "per-sequence document offsets");
    if (c.ranges) {
      // The index as the host kernels read it; its entries are six int64 each (RangeEntry), in
      // the order rfa_cuda_attention_shape's range_entries documents.
      static_assert(sizeof(RangeEntry) == 6 * sizeof(std::int64_t), "RangeEntry is six int64");
      const MaskRangeIndex x = c.ranges->index();
      const std::size_t bands = std::size_t(x.band_count);
      copy.range_band_begin = device_copy(x.band_begin, bands, "rfa::range_band_begin", "mask range bands");
      copy.range_band_end = device_copy(x.band_end, bands, "rfa::range_band_end", "mask range bands");
      copy.range_band_offset =
          device_copy(x.band_offset, bands > 0 ? bands + 1 : 0, "rfa::range_band_offset", "mask range band offsets");
      const std::size_t entries = bands > 0 ? std::size_t(x.band_offset[bands]) : 0;
      copy.range_entries = device_copy(reinterpret_cast<const std::int64_t*>(x.entries), 6 * entries,
                                       "rfa::range_entries", "mask range entries");
    }
  });
  return copy;
}

}  // namespace engine
}  // namespace rfa

#endif  // RFA_ENGINE_CUDA
