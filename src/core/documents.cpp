// SPDX-License-Identifier: BSD-3-Clause
#include "core/documents.hpp"

#include "core/error.hpp"
#include "core/fnv_hash.hpp"

namespace rfa {

void validate_document_bounds(const std::int64_t* bounds, std::int64_t count, std::int64_t seq_total,
                              const char* what) {
  if (count == 0) return;
  require(count >= 2, what, " has ", count, " value(s); it needs documents + 1 cumulative boundaries, from 0 to ",
          "seq_total (e.g. {0, 100, 4096} for two documents), or 0 values for none");
  require(bounds != nullptr, what, " is NULL but its count is ", count);
  require(bounds[0] == 0, what, "[0] is ", bounds[0], "; the first boundary must be 0");
  for (std::int64_t i = 1; i < count; ++i) {
    if (bounds[i] < bounds[i - 1]) {
      fail(RFA_ERROR_INVALID_ARGUMENT, what, "[", i, "] = ", bounds[i], " is smaller than ", what, "[", i - 1,
           "] = ", bounds[i - 1], ": boundaries are cumulative lengths and must never decrease");
    }
  }
  if (seq_total >= 0) {
    require(bounds[count - 1] == seq_total, what, "[", count - 1, "] = ", bounds[count - 1],
            " but the last boundary must be seq_total (", seq_total, "): the documents must cover the sequence");
  }
}

std::int64_t document_bounds_hash(const std::int64_t* bounds, std::int64_t count) {
  std::uint64_t h = kFnvOffsetBasis;
  for (std::int64_t i = 0; i < count; ++i) fnv1a_append(h, bounds[i]);
  return fnv1a_value(h);
}

}  // namespace rfa
