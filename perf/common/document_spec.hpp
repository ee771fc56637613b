// SPDX-License-Identifier: BSD-3-Clause
// Packed documents from a SPEC (rfa_run --documents, rfa_kernel_bench --rfa_documents): one list
// for every batch entry or one per entry, in the form the library takes them
// (rfa_options_t::doc_boundaries and doc_boundary_offsets).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rfa {
namespace perf {

/// Cumulative boundaries (0 .. seq for each list) and, for one list per batch entry, the batch
/// + 1 offsets that cut them into the entries' lists (empty: `bounds` serves every entry).
struct DocumentLists {
  std::vector<std::int64_t> bounds;
  std::vector<std::int64_t> offsets;
  /// Batch entry e's boundaries (empty: one document).
  std::vector<std::int64_t> entry(std::int64_t e) const;
};

/// The lists SPEC describes over `seq` tokens for `batch` entries. SPEC is one entry's form, or
/// `batch` of them separated by '/': "L1,L2,..." (documents of those lengths, then one holding
/// the tokens left), "random:N" (N documents cut at positions drawn from a generator seeded by
/// the entry's index) or nothing (one document). Throws RFA_ERROR_INVALID_ARGUMENT naming the
/// part that does not fit (lengths over seq, a count of entries other than 1 or batch).
/// `option` names the flag in the messages (rfa_run's --documents by default).
DocumentLists parse_documents(const std::string& spec, std::int64_t seq, std::int64_t batch,
                              const std::string& option = "--documents");

}  // namespace perf
}  // namespace rfa
