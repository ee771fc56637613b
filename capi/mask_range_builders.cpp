// SPDX-License-Identifier: BSD-3-Clause
// The C API's builders of the common masks as lists of ranges (rfa.h, "Masks as ranges"): the
// core's lists (core/mask_range_builders.hpp), written where the caller made room, or counted.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "buffer_checks.hpp"
#include "core/error.hpp"
#include "core/mask_range_builders.hpp"
#include "firewall.hpp"
#include "rfa/rfa.h"

namespace rfa {
namespace capi {
namespace {

/// `n` elements of `size` bytes, held at INT64_MAX where that overflows (room past any memory:
/// the overlap check needs only where it starts).
std::int64_t bytes_of(std::int64_t n, std::size_t size) {
  std::int64_t bytes = 0;
  return __builtin_mul_overflow(n, std::int64_t(size), &bytes) ? std::numeric_limits<std::int64_t>::max() : bytes;
}

/// The C entry point's body, inside the exception firewall: the mask's entry count from
/// `how_many` (which checks the arguments) always, and its entries, made by `build` only then,
/// where the caller made room for all of them; so asking for the count builds nothing long.
/// `*count` is written last, after every read of the inputs.
template <class Count, class Build>
rfa_result_t count_and_build(const char* name, rfa_mask_range_t* ranges, std::int64_t capacity, std::int64_t* count,
                             Count&& how_many, Build&& build, Buffer input = {}) {
  return guard(name, [&] {
    if (!count) fail(RFA_ERROR_INVALID_ARGUMENT, "count is NULL");
    require(capacity >= 0, "capacity is ", capacity, "; it must be >= 0");
    // The list's copy would overwrite a count inside its room, and the count an input it is in.
    const Buffer counted{"count", count, std::int64_t(sizeof *count)};
    if (ranges)
      require(!overlap(counted, {"ranges", ranges, bytes_of(capacity, sizeof(rfa_mask_range_t))}),
              "count points into ranges, which the list would overwrite");
    if (input.data)
      require(!overlap(counted, input), "count points into the input ", input.name,
              ", which the count would overwrite");
    const std::int64_t n = how_many();
    if (!ranges) {
      require(capacity == 0, "ranges is NULL but capacity is ", capacity, " (NULL with capacity 0 asks for the count)");
      *count = n;
      return RFA_SUCCESS;
    }
    if (capacity < n) {
      *count = n;
      fail(RFA_ERROR_INVALID_ARGUMENT, "the mask needs ", n, " entries but capacity is ", capacity,
           " (call with ranges NULL and capacity 0 for the count)");
    }
    const std::vector<rfa_mask_range_t> list = build();
    if (std::int64_t(list.size()) != n)
      fail(RFA_ERROR_INTERNAL, name, " built ", list.size(), " entries where it counted ", n);
    std::copy(list.begin(), list.end(), ranges);
    *count = n;
    return RFA_SUCCESS;
  });
}

/// The same for a mask of a few entries, counted by building its list.
template <class Build>
rfa_result_t build_and_deliver(const char* name, rfa_mask_range_t* ranges, std::int64_t capacity, std::int64_t* count,
                               Build&& build) {
  std::vector<rfa_mask_range_t> list;
  return count_and_build(
      name, ranges, capacity, count,
      [&] {
        list = build();
        return std::int64_t(list.size());
      },
      [&] { return list; });
}

}  // namespace
}  // namespace capi
}  // namespace rfa

using rfa::capi::build_and_deliver;
using rfa::capi::bytes_of;
using rfa::capi::count_and_build;

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
  return count_and_build(
      __func__, ranges, capacity, count, [&] { return rfa::document_count(doc_boundaries, boundary_count); },
      [&] { return rfa::document_ranges(doc_boundaries, boundary_count, causal != 0); },
      {"doc_boundaries", doc_boundaries, bytes_of(boundary_count, sizeof(int64_t))});
}

RFA_API rfa_result_t rfa_mask_ranges_prefix_lm(int64_t seq_total, int64_t prefix, rfa_mask_range_t* ranges,
                                               int64_t capacity, int64_t* count) {
  return build_and_deliver(__func__, ranges, capacity, count, [&] { return rfa::prefix_lm_ranges(seq_total, prefix); });
}

RFA_API rfa_result_t rfa_mask_ranges_block_causal(int64_t seq_total, int64_t block, rfa_mask_range_t* ranges,
                                                  int64_t capacity, int64_t* count) {
  return count_and_build(
      __func__, ranges, capacity, count, [&] { return rfa::block_causal_count(seq_total, block); },
      [&] { return rfa::block_causal_ranges(seq_total, block); });
}

RFA_API rfa_result_t rfa_mask_ranges_grid_neighbourhood(int64_t nx, int64_t ny, int64_t nz, int64_t radius,
                                                        rfa_mask_range_t* ranges, int64_t capacity, int64_t* count) {
  return count_and_build(
      __func__, ranges, capacity, count, [&] { return rfa::grid_neighbourhood_count(nx, ny, nz, radius); },
      [&] { return rfa::grid_neighbourhood_ranges(nx, ny, nz, radius); });
}

}  // extern "C"
