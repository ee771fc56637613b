// SPDX-License-Identifier: BSD-3-Clause
#include "core/allocation.hpp"

#include <limits>

#include "core/error.hpp"
#include "core/text_stream.hpp"

namespace rfa {

std::string describe_bytes(std::int64_t bytes) {
  static const char* const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double value = double(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 6) {
    value /= 1024.0;
    ++unit;
  }
  std::string text = std::to_string(bytes) + " bytes";
  if (unit > 0) {
    text += " (" + fixed_number(value, 1) + " " + units[unit] + ")";
  }
  return text;
}

void fail_out_of_memory(const std::string& label, std::int64_t bytes, const char* space,
                        const std::string& allocator_said) {
  const std::string first_line = allocator_said.substr(0, allocator_said.find('\n'));
  fail(RFA_ERROR_OUT_OF_MEMORY, "cannot allocate ", describe_bytes(bytes), " for '", label, "' in ", space,
       " memory (the allocator said: ", first_line, ")");
}

std::int64_t checked_bytes(const std::string& label, std::int64_t element_size, std::int64_t e0, std::int64_t e1,
                           std::int64_t e2, std::int64_t e3) {
  const std::int64_t limit = std::numeric_limits<std::int64_t>::max();
  std::int64_t bytes = element_size;
  for (std::int64_t e : {e0, e1, e2, e3}) {
    require(e >= 0, "buffer '", label, "' has a negative extent (", e, ")");
    require(e == 0 || bytes <= limit / e, "buffer '", label, "' would need more than 2^63 bytes");
    bytes *= e;
  }
  return bytes;
}

}  // namespace rfa
