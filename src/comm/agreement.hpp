// SPDX-License-Identifier: BSD-3-Clause
// Collective validation (docs/architecture.md §6.7): when one rank finds a problem, every rank must fail,
// none may be left waiting in a collective the failing rank never reaches.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>

#include "comm/communicator.hpp"
#include "core/error.hpp"
#include "rfa/rfa.h"

namespace rfa::comm {

/// Collective. Returns normally only if `ok_here` holds on every rank. Otherwise throws on
/// every rank: ranks where it failed throw `code` with `message_here`; the others throw the code
/// of the lowest failing ring position, naming that position, so their logs point at the rank
/// with the details.
void fail_everywhere_unless(Communicator& comm, bool ok_here, rfa_result_t code,
                            const std::string& message_here);

/// Collective. Runs `checks` (which throw rfa::Error on bad input), then agrees: if they threw
/// on any rank, every rank throws (fail_everywhere_unless), before anything else moves.
template <class Checks>
void check_everywhere(Communicator& comm, Checks&& checks) {
  bool ok = true;
  rfa_result_t code = RFA_ERROR_INVALID_ARGUMENT;
  std::string message;
  try {
    checks();
  } catch (const Error& e) {
    ok = false;
    code = e.code();
    message = e.what();
  }
  fail_everywhere_unless(comm, ok, code, message);
}

/// A value that must be the same on every rank, and what it is called in messages.
struct NamedValue {
  const char* name;
  std::int64_t value;
};

/// Collective, one reduction for all values. Throws RFA_ERROR_INVALID_USAGE on every rank
/// unless each value is equal on all ranks; the message names the first value that differs
/// and the smallest and largest seen.
void require_same_everywhere(Communicator& comm, std::initializer_list<NamedValue> values);

}  // namespace rfa::comm
