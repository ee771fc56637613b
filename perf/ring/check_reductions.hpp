// SPDX-License-Identifier: BSD-3-Clause
// What the main job's two checks (reference_check.hpp, sampled_check.hpp) share: the error
// measure and its reduction over ranks, and the gather of per-row statistics by position.
#pragma once

#include <algorithm>
#include <cmath>
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
  double dsinks = 0;  ///< the attention sinks' gradient (0 without sinks)
};

/// {max |got - ref|, max |ref|}, accumulated entry by entry; an infinite reference must be
/// matched exactly (a row that sees no key has lse -inf), and NaN is an infinite error.
/// `magnitude`, where given, is the size of the terms whose sum or difference `ref` is (their
/// absolute values summed): rounding errors scale with it, not with ref, which cancellation can
/// bring to 0 (a query that sees one key has dq = 0 exactly, from terms of order 1).
struct ErrorAndScale {
  double err = 0, scale = 0;
  void add(double got, double ref, double magnitude = 0) {
    if (std::isinf(ref) || std::isinf(got)) {
      if (got != ref) err = INFINITY;
      return;
    }
    err = std::max(err, std::isnan(got) ? INFINITY : std::abs(got - ref));
    scale = std::max(scale, std::max(std::abs(ref), magnitude));
  }
  std::pair<double, double> pair() const { return {err, scale}; }
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
