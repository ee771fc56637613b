// SPDX-License-Identifier: BSD-3-Clause
// Checks that the ring positions the ranks chose form a permutation of 0..P-1, so that the
// ring is one cycle over all ranks. Pure (no communication): every rank runs it on the same
// gathered array and so reaches the same verdict.
#pragma once

#include <string>
#include <vector>

namespace rfa::comm {

/// "" if positions[rank] is a permutation of 0..positions.size()-1; otherwise a message
/// naming every out-of-range position, every position claimed twice, and every one missing.
std::string describe_position_errors(const std::vector<int>& positions);

}  // namespace rfa::comm
