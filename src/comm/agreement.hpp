// SPDX-License-Identifier: BSD-3-Clause
// Collective validation (docs/architecture.md §6.7): when one rank finds a problem, every rank must fail,
// none may be left waiting in a collective the failing rank never reaches.
//
// Every agreement is one reduction of the same fixed-size record, which also carries the
// communicator's call stamp (Communicator::begin_call): ranks whose agreements meet while they
// are in different calls (another operation, another call of the sequence) all fail with
// RFA_ERROR_CALL_MISMATCH, naming what each side called, before anything else of the call
// moves. Because the record never changes size, two agreements of different calls that meet
// are still a well-formed reduction, and the stamps tell them apart.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <new>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "core/error.hpp"
#include "rfa/rfa.h"

namespace rfa::comm {

/// Collective. Returns normally only if `ok_here` holds on every rank and every rank carries
/// the same call stamp. Otherwise throws on every rank: RFA_ERROR_CALL_MISMATCH (a plain
/// Error: the ranks are out of step) when the stamps differ; else an AgreedError: ranks where
/// the check failed throw `code` with `message_here`; the others throw the code of the lowest
/// failing ring position, naming that position, so their logs point at the rank with the
/// details. A rank whose check failed on a communicator that has timed out or, for NCCL, was
/// aborted after a failure (has_abandoned_transfers) throws its own error at once: no
/// agreement can run there.
void fail_everywhere_unless(Communicator& comm, bool ok_here, rfa_result_t code, const std::string& message_here);

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
  } catch (const std::bad_alloc&) {  // a check's own allocation: agreed like any other failure
    ok = false;
    code = RFA_ERROR_OUT_OF_MEMORY;
    message = "out of host memory in the argument checks";
  }
  fail_everywhere_unless(comm, ok, code, message);
}

/// A value that must be the same on every rank, and what it is called in messages.
struct NamedValue {
  const char* name;
  std::int64_t value;
};

/// At most this many values per require_same_everywhere() (the record has a fixed size; the
/// engine's configuration, the largest caller, agrees on 17).
constexpr std::size_t kMaxAgreedValues = 24;

/// Collective, one reduction for all values (at most kMaxAgreedValues). Throws on every rank
/// unless each value is equal on all ranks: RFA_ERROR_CALL_MISMATCH as fail_everywhere_unless,
/// else an AgreedError RFA_ERROR_INVALID_USAGE naming the first value that differs and the
/// smallest and largest seen.
void require_same_everywhere(Communicator& comm, std::initializer_list<NamedValue> values);

/// Collective, one reduction (at most kMaxAgreedValues values): the smallest of each value over
/// all ranks, on every rank. Throws RFA_ERROR_CALL_MISMATCH as fail_everywhere_unless.
std::vector<std::int64_t> min_everywhere(Communicator& comm, std::initializer_list<std::int64_t> values);

}  // namespace rfa::comm
