// SPDX-License-Identifier: BSD-3-Clause
#include "core/documents.hpp"

#include <string>

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

void validate_document_lists(const std::int64_t* bounds, std::int64_t count, const std::int64_t* offsets,
                             std::int64_t offset_count, std::int64_t batch, std::int64_t seq_total,
                             const char* bounds_name, const char* offsets_name) {
  if (offset_count == 0) {
    validate_document_bounds(bounds, count, seq_total, bounds_name);
    return;
  }
  // Compared as offset_count - 1 == batch: batch + 1 could overflow for a batch not yet checked.
  require(offset_count >= 1 && offset_count - 1 == batch, offsets_name, " has ", offset_count,
          " value(s); per-sequence documents need batch + 1 offsets (batch is ", batch, ") into ", bounds_name,
          " (entry e's list is ", bounds_name, "[o[e] .. o[e + 1])), or 0 values for one list serving every entry");
  require(offsets != nullptr, offsets_name, " is NULL but its count is ", offset_count);
  require(count >= 0, bounds_name, " has a negative count, ", count);
  require(count == 0 || bounds != nullptr, bounds_name, " is NULL but its count is ", count);
  require(offsets[0] == 0, offsets_name, "[0] is ", offsets[0], "; the first offset must be 0");
  for (std::int64_t e = 0; e < batch; ++e) {
    if (offsets[e + 1] < offsets[e]) {
      fail(RFA_ERROR_INVALID_ARGUMENT, offsets_name, "[", e + 1, "] = ", offsets[e + 1], " is smaller than ",
           offsets_name, "[", e, "] = ", offsets[e], ": offsets must never decrease");
    }
  }
  require(offsets[batch] == count, offsets_name, "[", batch, "] = ", offsets[batch], " but the last offset must be ",
          bounds_name, "'s count (", count, "): the entries' lists must use every value");
  for (std::int64_t e = 0; e < batch; ++e) {
    const std::string name = std::string(bounds_name) + "[" + std::to_string(offsets[e]) + " .. " +
                             std::to_string(offsets[e + 1]) + ") (batch entry " + std::to_string(e) + "'s list)";
    validate_document_bounds(bounds + offsets[e], offsets[e + 1] - offsets[e], seq_total, name.c_str());
  }
}

std::int64_t document_bounds_hash(const std::int64_t* bounds, std::int64_t count) {
  std::uint64_t h = kFnvOffsetBasis;
  for (std::int64_t i = 0; i < count; ++i) fnv1a_append(h, bounds[i]);
  return fnv1a_value(h);
}

}  // namespace rfa
