// SPDX-License-Identifier: BSD-3-Clause
#include "comm/agreement.hpp"

#include <vector>

#include "core/error.hpp"

namespace rfa::comm {

void fail_everywhere_unless(Communicator& comm, bool ok_here, rfa_result_t code,
                            const std::string& message_here) {
  // Each rank that failed offers its position and its code, one that did not offers P: the
  // minimum is the lowest failing position with its code, or P when all succeeded. One
  // reduction, and the ranks that did not fail report the code of the one that did (a refused
  // allocation there is RFA_ERROR_OUT_OF_MEMORY everywhere, not an invalid argument).
  constexpr std::int64_t kCodes = std::int64_t(1) << 16;  // above every rfa_result_t value
  const std::int64_t offered = ok_here ? comm.size() * kCodes : comm.rank() * kCodes + std::int64_t(code);
  const std::int64_t lowest = comm.allreduce(offered, ReduceOp::min);
  if (lowest == comm.size() * kCodes) return;
  if (!ok_here) throw Error(code, message_here);
  fail(rfa_result_t(lowest % kCodes), "failed on another rank (lowest failing ring position: ", lowest / kCodes,
       "); see that rank's message");
}

void require_same_everywhere(Communicator& comm, std::initializer_list<NamedValue> values) {
  // ~v = -v-1 reverses the order without overflow, so max(~v) = ~min(v): a single max
  // reduction finds both ends of every value.
  std::vector<std::int64_t> ends;
  for (const NamedValue& v : values) {
    ends.push_back(~v.value);
    ends.push_back(v.value);
  }
  comm.allreduce_inplace(ends.data(), ends.size(), ReduceOp::max);
  std::size_t i = 0;
  for (const NamedValue& v : values) {
    const std::int64_t lo = ~ends[2 * i], hi = ends[2 * i + 1];
    if (lo != hi) {
      fail(RFA_ERROR_INVALID_USAGE, v.name, " differs between ranks (from ", lo, " to ", hi,
           "); every rank must pass the same value");
    }
    ++i;
  }
}

}  // namespace rfa::comm
