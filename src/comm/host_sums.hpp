// SPDX-License-Identifier: BSD-3-Clause
// A few host values summed over the ranks, exactly alike everywhere: every rank's values are
// gathered through the transports' host integer reduction (which every transport offers, NCCL
// and the staged one included: the agreements run on it), each rank filling only its own slot,
// and added in ring-position order. So the sum is bitwise the same on every rank and from run to
// run, whatever the reduction tree of the transport. For small results (a gradient per head),
// not tensors: it moves size() * count values.
#pragma once

#include <vector>

#include "comm/communicator.hpp"

namespace rfa::comm {

/// Collective. The elementwise sum over all ranks of `values` (the same count on every rank),
/// added in ring-position order, on every rank.
std::vector<double> sum_in_rank_order(Communicator& comm, const std::vector<double>& values);

}  // namespace rfa::comm
