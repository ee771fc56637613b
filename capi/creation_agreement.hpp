// SPDX-License-Identifier: BSD-3-Clause
// The one small collective of rfa_context_create (docs/architecture.md §6.7): every rank learns, from a
// single MPI_Allgather over the application's communicator, whether every rank's arguments
// were usable and whether all ranks passed the same options. Unlike comm/agreement.hpp (which
// reports min and max), it names the disagreeing ranks, which is what a user needs to find
// the rank that read a different input file.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>

#include "rfa/rfa.h"

namespace rfa {
namespace capi {

/// The agreement's record per rank, in int64 values: the verdict's code, one value per compared
/// option, the proposed id. A rank whose CPU the build refuses sends one too
/// (capi/refused_creation.hpp).
constexpr int kCreationRecordLength = 30;

/// What one rank brings to the agreement.
struct LocalVerdict {
  rfa_result_t code = RFA_SUCCESS;  ///< RFA_SUCCESS if this rank's arguments were usable
  std::string message;              ///< the detailed message when not
};

/// The deadline of a creation's collectives in seconds (0: none): options.timeout_s when this
/// rank's options were usable and it is set, else RFA_TIMEOUT_S or the default.
double creation_timeout(const LocalVerdict& verdict, const rfa_options_t& options);

/// Collective over `comm`. Returns normally only if every rank's verdict is success and every
/// rank passed the same options (`options` is ignored on ranks whose verdict is a failure).
/// Returns the new context's id: the largest `proposed_id` of any rank, the same everywhere.
/// Otherwise throws on every rank: a failing rank its own code and message; the others the
/// lowest failing rank's code and message, naming the failing ranks; when all are usable but options
/// differ, RFA_ERROR_INVALID_USAGE naming the first differing field and the ranks whose value
/// differs from the lowest rank's. Ranks are ranks of `comm`. RFA_ERROR_MPI if MPI fails.
std::int64_t agree_on_creation(MPI_Comm comm, const LocalVerdict& verdict, const rfa_options_t& options,
                               std::int64_t proposed_id);

}  // namespace capi
}  // namespace rfa
