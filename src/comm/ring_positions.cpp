// SPDX-License-Identifier: BSD-3-Clause
#include "comm/ring_positions.hpp"
#include "core/text_stream.hpp"

namespace rfa::comm {

std::string describe_position_errors(const std::vector<int>& positions) {
  const int ranks = int(positions.size());
  std::vector<int> owner(positions.size(), -1);
  TextStream problems;
  for (int rank = 0; rank < ranks; ++rank) {
    const int p = positions[std::size_t(rank)];
    if (p < 0 || p >= ranks) {
      problems << "; rank " << rank << " gave position " << p << ", outside 0.." << ranks - 1;
    } else if (owner[std::size_t(p)] >= 0) {
      problems << "; position " << p << " was given by ranks " << owner[std::size_t(p)] << " and " << rank;
    } else {
      owner[std::size_t(p)] = rank;
    }
  }
  if (problems.tellp() == 0) return "";
  for (int p = 0; p < ranks; ++p) {
    if (owner[std::size_t(p)] < 0) problems << "; no rank took position " << p;
  }
  TextStream message;
  message << "ring positions must be a permutation of 0.." << ranks - 1 << " (one distinct position per rank)"
          << problems.str();
  return message.str();
}

}  // namespace rfa::comm
