// SPDX-License-Identifier: BSD-3-Clause
// Collecting every rank's key over MPI.
#pragma once

#include <mpi.h>

#include <vector>

#include "topology/rank_key.hpp"

namespace rfa::topology {

/// Collective: every rank gets every key, keys[i] from rank i of comm (rank fields set).
/// Throws RFA_ERROR_INVALID_USAGE on every rank when a key comes from a build with another
/// RankKey layout.
std::vector<RankKey> gather_keys(MPI_Comm comm, const RankKey& local);

}  // namespace rfa::topology
