// SPDX-License-Identifier: BSD-3-Clause
#include "comm/host_sums.hpp"

#include <cstdint>
#include <cstring>

namespace rfa::comm {

std::vector<double> sum_in_rank_order(Communicator& comm, const std::vector<double>& values) {
  const std::size_t n = values.size(), P = std::size_t(comm.size()), me = std::size_t(comm.rank());
  static_assert(sizeof(double) == sizeof(std::int64_t), "a double travels as one 64-bit integer");
  if (n == 0) return {};  // nothing to send (and no null pointer handed to memcpy)
  // Every slot but this rank's is zero, so the integer sum of a slot is the bits of its owner.
  std::vector<std::int64_t> slots(P * n, 0);
  std::memcpy(slots.data() + me * n, values.data(), n * sizeof(double));
  comm.allreduce_inplace(slots.data(), slots.size(), ReduceOp::sum);
  std::vector<double> sum(n, 0.0);
  for (std::size_t r = 0; r < P; ++r)
    for (std::size_t i = 0; i < n; ++i) {
      double v;
      std::memcpy(&v, &slots[r * n + i], sizeof v);
      sum[i] += v;
    }
  return sum;
}

}  // namespace rfa::comm
