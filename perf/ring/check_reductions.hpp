// SPDX-License-Identifier: BSD-3-Clause
// What the main job's two checks (reference_check.hpp, sampled_check.hpp) share: the error
// measure and its reduction over ranks, and the gather of per-row statistics by position.
#pragma once

#include <cstdint>
#include <utility>

#include "comm/communicator.hpp"
#include "core/positions.hpp"

namespace rfa {
namespace perf {

/// Largest errors of one run: out, dq, dk and dv relative to the largest reference value, lse
/// absolute (natural log).
struct CheckErrors {
  double out = 0, lse = 0, dq = 0, dk = 0, dv = 0;
};

/// Collective: max over ranks of err / max over ranks of scale, from this rank's
/// {max |got - ref|, max |ref|}.
double relative_everywhere(comm::Communicator& ring, std::pair<double, double> local);

/// Collective: `all` [B][H][S] from every rank's `local` [B][H][L] at its rows `mine`. By
/// positions rather than by layout, so that any strategy's row assignment (the hybrid applies
/// the layout per ring group) is gathered alike; every rank holds the same number of rows.
void allgather_by_position(comm::Communicator& ring, const PositionMap& mine, const float* local, std::int64_t B,
                           std::int64_t H, float* all, std::int64_t S);

}  // namespace perf
}  // namespace rfa
