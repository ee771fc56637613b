// SPDX-License-Identifier: BSD-3-Clause
#include "core/positions.hpp"

#include "core/error.hpp"

namespace rfa {

void validate_position_map(const PositionMap& map, std::int64_t expected_length, const char* what) {
  require(map.count >= 1 && map.count <= PositionMap::kMaxSegments, what, " position map must have 1 to ",
          PositionMap::kMaxSegments, " segments, has ", map.count);
  for (int s = 0; s < map.count; ++s) {
    require(map.seg[s].length >= 0, what, " position map segment ", s, " has negative length ", map.seg[s].length);
    require(map.seg[s].stride >= 1, what, " position map segment ", s, " has stride ", map.seg[s].stride,
            " (must be >= 1)");
    require(map.seg[s].start >= 0, what, " position map segment ", s, " starts at negative position ",
            map.seg[s].start);
  }
  require(map.length() == expected_length, what, " position map covers ", map.length(), " rows but the tensor has ",
          expected_length);
}

}  // namespace rfa
