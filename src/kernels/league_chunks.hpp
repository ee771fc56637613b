// SPDX-License-Identifier: BSD-3-Clause
// A TeamPolicy's league size is an int; the forward's league (batch x heads x query tiles)
// passes INT_MAX for long enough local sequences. Larger leagues run as several launches,
// each functor told the index of its first team.
#pragma once

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cstdint>
#include <limits>

#include "kernels/host_dispatch_lock.hpp"

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
    const HostDispatchLock<typename Policy::execution_space> lock;
    Kokkos::parallel_for(name, policy, functor);
  }
}

/// How many teams share the key tiles of one (batch, kv head) unit in the backward kernels:
/// one, unless the units alone cannot keep every host thread busy (then dq is added atomically).
/// `requested` > 0 (AttentionParams::key_tile_splits) takes that many instead, at most one
/// per key tile: the tests run the split path on one thread too.
inline int key_tile_chunks(std::int64_t units, int n_ktiles, std::int64_t threads, int requested = 0) {
  if (requested > 0) return std::max(1, std::min(requested, n_ktiles));
  if (threads == 1) return 1;
  return int(std::max<std::int64_t>(1, std::min<std::int64_t>(n_ktiles, (2 * threads + units - 1) / units)));
}

}  // namespace kernels
}  // namespace rfa
