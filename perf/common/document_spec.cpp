// SPDX-License-Identifier: BSD-3-Clause
#include "document_spec.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "option_errors.hpp"

namespace rfa {
namespace perf {
namespace {

/// A number of the spec given to `option`: a whole number >= 0 (RFA_ERROR_INVALID_ARGUMENT
/// otherwise).
std::int64_t spec_number(const std::string& option, const std::string& text, const std::string& what) {
  return refused_as_rfa_error([&] { return whole_number(option + "' " + what, text, 0); });
}

/// splitmix64: a fixed sequence for a seed, the same on every rank and machine.
std::uint64_t next_random(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// One entry's boundaries (empty: one document).
std::vector<std::int64_t> entry_bounds(const std::string& option, const std::string& spec, std::int64_t seq,
                                       std::int64_t entry) {
  if (spec.empty()) return {};
  std::vector<std::int64_t> b{0};
  if (spec.rfind("random:", 0) == 0) {
    const std::int64_t n = spec_number(option, spec.substr(7), "random:N's N");
    require(n >= 1, option, " random:N needs N >= 1");
    std::uint64_t state = 0x5EED0000ull + std::uint64_t(entry);
    for (std::int64_t d = 1; d < n; ++d) b.push_back(std::int64_t(next_random(state) % std::uint64_t(seq + 1)));
    std::sort(b.begin(), b.end());
  } else {
    std::size_t start = 0;
    while (start <= spec.size()) {
      const std::size_t comma = std::min(spec.find(',', start), spec.size());
      const std::int64_t length = spec_number(option, spec.substr(start, comma - start), "length");
      require(length <= seq - b.back(), option, " ", spec, ": the lengths add up to more than the sequence's ", seq,
              " tokens");
      b.push_back(b.back() + length);
      start = comma + 1;
    }
  }
  b.push_back(seq);  // the last document holds what is left
  return b;
}

}  // namespace

std::vector<std::int64_t> DocumentLists::entry(std::int64_t e) const {
  if (offsets.empty()) return bounds;
  return {bounds.begin() + offsets[std::size_t(e)], bounds.begin() + offsets[std::size_t(e) + 1]};
}

DocumentLists parse_documents(const std::string& spec, std::int64_t seq, std::int64_t batch,
                              const std::string& option) {
  std::vector<std::string> entries;
  for (std::size_t start = 0;;) {
    const std::size_t slash = spec.find('/', start);
    entries.push_back(spec.substr(start, slash == std::string::npos ? std::string::npos : slash - start));
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  DocumentLists lists;
  if (entries.size() == 1) {
    lists.bounds = entry_bounds(option, entries[0], seq, 0);
    return lists;
  }
  require(std::int64_t(entries.size()) == batch, option, " ", spec, " gives ", entries.size(),
          " lists separated by '/' but the batch is ", batch, ": give one list for every entry, or one per entry");
  lists.offsets.push_back(0);
  for (std::size_t e = 0; e < entries.size(); ++e) {
    const std::vector<std::int64_t> b = entry_bounds(option, entries[e], seq, std::int64_t(e));
    lists.bounds.insert(lists.bounds.end(), b.begin(), b.end());
    lists.offsets.push_back(std::int64_t(lists.bounds.size()));
  }
  return lists;
}

}  // namespace perf
}  // namespace rfa
