// SPDX-License-Identifier: BSD-3-Clause
// Making a step's failure everybody's failure on a raw MPI communicator (creation, before the
// ring's communicator exists): a collective step must fail on every rank with the same error,
// never leave the ranks that did not fail waiting in the next collective. Every collective here
// ends by the deadline (collective/bounded_collectives.hpp).
#pragma once

#include <mpi.h>

#include <functional>
#include <string>
#include <vector>

#include "core/environment.hpp"

namespace rfa::collective {

/// Runs step on every rank of comm (collective). When it throws on any rank, every rank throws
/// an rfa::Error with the code and message of the lowest failing rank; the message says which
/// rank. Exceptions other than rfa::Error count as RFA_ERROR_INTERNAL.
void agree_on_failure(MPI_Comm comm, const std::function<void()>& step);

/// The value of an environment variable, checked to be the same on every rank (collective).
/// Throws RFA_ERROR_INVALID_USAGE on every rank when ranks see different values. "" when unset.
std::string agreed_env(MPI_Comm comm, Env variable);

/// Broadcasts a string from root; other ranks' strings are replaced.
void broadcast_string(MPI_Comm comm, std::string& text, int root);

/// Broadcasts a vector of ints from root; other ranks' vectors are resized to match.
void broadcast_ints(MPI_Comm comm, std::vector<int>& values, int root);

}  // namespace rfa::collective
