// SPDX-License-Identifier: BSD-3-Clause
#include "check_reductions.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/error.hpp"

namespace rfa {
namespace perf {

double relative_everywhere(comm::Communicator& ring, std::pair<double, double> local) {
  // Errors are non-negative doubles: their bit patterns order like the values, so the int64
  // max reduction the communicator offers finds the largest.
  std::int64_t bits[2];
  std::memcpy(&bits[0], &local.first, 8);
  std::memcpy(&bits[1], &local.second, 8);
  ring.allreduce_inplace(bits, 2, comm::ReduceOp::max);
  double err, scale;
  std::memcpy(&err, &bits[0], 8);
  std::memcpy(&scale, &bits[1], 8);
  return err / std::max(scale, 1e-30);
}

void allgather_by_position(comm::Communicator& ring, const PositionMap& mine, const float* local, std::int64_t B,
                           std::int64_t H, float* all, std::int64_t S) {
  const std::int64_t L = mine.length(), P = ring.size();
  require(ring.allreduce(L, comm::ReduceOp::min) == ring.allreduce(L, comm::ReduceOp::max),
          "the check needs the same number of rows on every rank");
  std::vector<std::int64_t> rows(static_cast<std::size_t>(L)), all_rows(static_cast<std::size_t>(L * P));
  for (std::int64_t i = 0; i < L; ++i) rows[std::size_t(i)] = mine(i);
  ring.allgather(rows.data(), all_rows.data(), std::size_t(L) * sizeof(std::int64_t));
  std::vector<float> values(static_cast<std::size_t>(B * H * L * P));
  ring.allgather(local, values.data(), std::size_t(B * H * L) * sizeof(float));
  for (std::int64_t r = 0; r < P; ++r)
    for (std::int64_t bh = 0; bh < B * H; ++bh)
      for (std::int64_t i = 0; i < L; ++i)
        all[bh * S + all_rows[std::size_t(r * L + i)]] = values[std::size_t((r * B * H + bh) * L + i)];
}

}  // namespace perf
}  // namespace rfa
