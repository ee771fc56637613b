// SPDX-License-Identifier: BSD-3-Clause
// The C API's builders of the common masks as lists of ranges (rfa.h, "Masks as ranges"): the
// core's lists (core/mask_range_builders.hpp), written where the caller made room, or counted.
#include <vector>

#include "core/error.hpp"
#include "core/mask_range_builders.hpp"
#include "firewall.hpp"
#include "rfa/rfa.h"

namespace rfa {
namespace capi {
namespace {

/// Hands `list` to the caller (`count` not NULL): the count always; the entries where there is
/// room for all.
void deliver(const std::vector<rfa_mask_range_t>& list, rfa_mask_range_t* ranges, std::int64_t capacity,
             std::int64_t* count) {
  require(capacity >= 0, "capacity is ", capacity, "; it must be >= 0");
  const std::int64_t n = std::int64_t(list.size());
  *count = n;
  if (!ranges) {
    require(capacity == 0, "ranges is NULL but capacity is ", capacity, " (NULL with capacity 0 asks for the count)");
    return;
  }
  require(capacity >= n, "the mask needs ", n, " entries but capacity is ", capacity,
          " (call with ranges NULL and capacity 0 for the count)");
  for (std::int64_t i = 0; i < n; ++i) ranges[i] = list[std::size_t(i)];
}

/// The C entry point's body: builds the list, then delivers it, inside the exception firewall.
template <class Build>
rfa_result_t build_and_deliver(const char* name, rfa_mask_range_t* ranges, std::int64_t capacity, std::int64_t* count,
                               Build&& build) {
  return guard(name, [&] {
    if (!count) fail(RFA_ERROR_INVALID_ARGUMENT, "count is NULL");
    deliver(build(), ranges, capacity, count);
    return RFA_SUCCESS;
  });
}

}  // namespace
}  // namespace capi
}  // namespace rfa

using rfa::capi::build_and_deliver;

extern "C" {

RFA_API rfa_result_t rfa_mask_ranges_causal(int64_t seq_total, rfa_mask_range_t* ranges, int64_t capacity,
                                            int64_t* count) {
  return build_and_deliver(__func__, ranges, capacity, count, [&] { return rfa::causal_ranges(seq_total); });
}

RFA_API rfa_result_t rfa_mask_ranges_sliding_window(int64_t seq_total, int64_t window, int32_t causal,
                                                    rfa_mask_range_t* ranges, int64_t capacity, int64_t* count) {
  return build_and_deliver(__func__, ranges, capacity, count,
                           [&] { return rfa::sliding_window_ranges(seq_total, window, causal != 0); });
}

RFA_API rfa_result_t rfa_mask_ranges_documents(const int64_t* doc_boundaries, int64_t boundary_count, int32_t causal,
                                               rfa_mask_range_t* ranges, int64_t capacity, int64_t* count) {
  return build_and_deliver(__func__, ranges, capacity, count,
                           [&] { return rfa::document_ranges(doc_boundaries, boundary_count, causal != 0); });
}

RFA_API rfa_result_t rfa_mask_ranges_prefix_lm(int64_t seq_total, int64_t prefix, rfa_mask_range_t* ranges,
                                               int64_t capacity, int64_t* count) {
  return build_and_deliver(__func__, ranges, capacity, count, [&] { return rfa::prefix_lm_ranges(seq_total, prefix); });
}

RFA_API rfa_result_t rfa_mask_ranges_block_causal(int64_t seq_total, int64_t block, rfa_mask_range_t* ranges,
                                                  int64_t capacity, int64_t* count) {
  return build_and_deliver(__func__, ranges, capacity, count,
                           [&] { return rfa::block_causal_ranges(seq_total, block); });
}

RFA_API rfa_result_t rfa_mask_ranges_grid_neighbourhood(int64_t nx, int64_t ny, int64_t nz, int64_t radius,
                                                        rfa_mask_range_t* ranges, int64_t capacity, int64_t* count) {
  return build_and_deliver(__func__, ranges, capacity, count,
                           [&] { return rfa::grid_neighbourhood_ranges(nx, ny, nz, radius); });
}

}  // extern "C"
