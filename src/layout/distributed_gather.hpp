// SPDX-License-Identifier: BSD-3-Clause
// Reassembles a sharded tensor on every rank: all-gather the shards over the ring
// communicator, then place rank r's rows at positions(layout, S, P, r). For tests and result
// checks (it needs the whole tensor in memory on every rank), never for the engine.
#pragma once

#include <cstdint>

#include "comm/communicator.hpp"
#include "layout/shard_copy.hpp"
#include "rfa/rfa.h"

namespace rfa::layout {

/// Collective over `comm`. Every rank passes its shard `local` ([b][S/P][h][d], the rows of
/// positions(layout, global_seq, comm.size(), comm.rank())) and receives the global tensor
/// [b][S][h][d] in `global`. All ranks must pass the same layout, S and dims: checked, and a
/// mismatch or an invalid shape fails on every rank (RFA_ERROR_INVALID_USAGE / _ARGUMENT).
template <class T>
void allgather_bshd(comm::Communicator& comm, rfa_layout_t layout, const T* local, const BshdDims& dims, T* global,
                    std::int64_t global_seq);

/// The same for shards of any rows (a strategy's local_positions()): every rank passes the map
/// of its own rows, all of the same length; the maps are gathered with the shards.
template <class T>
void allgather_bshd(comm::Communicator& comm, const PositionMap& mine, const T* local, const BshdDims& dims, T* global,
                    std::int64_t global_seq);

/// The same for an fp32 [b][h][S/P] shard (lse) into [b][h][S].
void allgather_bhs(comm::Communicator& comm, rfa_layout_t layout, const float* local, std::int64_t batch,
                   std::int64_t heads, float* global, std::int64_t global_seq);

}  // namespace rfa::layout
