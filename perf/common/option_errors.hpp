// SPDX-License-Identifier: BSD-3-Clause
// command_line.hpp's refusals as rfa's errors, for the perf programs whose ranks report an
// rfa::Error once, from rank 0, before any communication (rfa_run, rfa_ring_bench,
// rfa_model_check, rfa_comm_bench, rfa_value_checks_bench): a refused number reads like every
// other refused option there.
#pragma once
#include "command_line.hpp"
#include "core/error.hpp"

namespace rfa {
namespace perf {

/// read()'s value; an OptionError it throws becomes an rfa::Error (RFA_ERROR_INVALID_ARGUMENT)
/// with the same message.
template <class Read>
auto refused_as_rfa_error(Read&& read) -> decltype(read()) {
  try {
    return read();
  } catch (const OptionError& e) {
    fail(RFA_ERROR_INVALID_ARGUMENT, e.what());
  }
}

}  // namespace perf
}  // namespace rfa
