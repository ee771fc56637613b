// SPDX-License-Identifier: BSD-3-Clause
#include "comm/nccl/nccl_timeout.hpp"

#include <cmath>
#include <limits>

#include "core/environment.hpp"
#include "core/error.hpp"

namespace rfa::comm::nccl {

double parse_timeout_seconds(const char* text, const char* source) {
  if (text == nullptr || *text == '\0') return kDefaultTimeoutSeconds;
  double seconds = 0.0;
  require(parse_decimal(text, &seconds) && std::isfinite(seconds) && seconds > 0, source, "='", text,
          "' is not a timeout: give a number of seconds > 0");
  return seconds;
}

double resolve_timeout_seconds(double requested) {
  if (requested > 0) return requested;
  if (requested == 0) return std::numeric_limits<double>::infinity();
  return parse_timeout_seconds(env_value(Env::nccl_timeout_s), env_name(Env::nccl_timeout_s));
}

}  // namespace rfa::comm::nccl
