// SPDX-License-Identifier: BSD-3-Clause
// A TeamPolicy's league size is an int; the forward's league (batch x heads x query tiles)
// passes INT_MAX for long enough local sequences. Larger leagues run as several launches,
// each functor told the index of its first team.
#pragma once

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cstdint>
#include <limits>

namespace rfa {
namespace kernels {

/// Runs `functor` (which has a `first_item` member added to its league rank) over `league`
/// teams of one thread each, in launches of at most `max_teams`; `configure(policy)` sets what
/// each launch's policy needs (scratch sizes).
template <class Policy, class Functor, class Configure>
void for_each_league_chunk(const char* name, std::int64_t league, Functor functor, Configure&& configure,
                           std::int64_t max_teams = std::numeric_limits<int>::max()) {
  for (std::int64_t first = 0; first < league; first += max_teams) {
    functor.first_item = first;
    Policy policy(typename Policy::execution_space(), int(std::min(max_teams, league - first)), 1);
    configure(policy);
    Kokkos::parallel_for(name, policy, functor);
  }
}

}  // namespace kernels
}  // namespace rfa
