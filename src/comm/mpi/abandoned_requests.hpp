// SPDX-License-Identifier: BSD-3-Clause
// Completing MPI requests whose handle was destroyed before wait() (an Exchange's destructor):
// they are never cancelled (a cancelled receive leaves the peer's message unmatched, and a
// collective cannot be cancelled), so they are polled to completion, and a wait that does not
// end is reported on stderr every 10 s instead of hanging silently. Never throws.
#pragma once

#include <mpi.h>

#include <string>

namespace rfa::comm::mpi {

/// Polls `count` requests until all are complete. `what` names them in messages ("a ring
/// exchange (tag 3, 4096 bytes)"). After MPI_Finalize it only reports that they were pending.
void complete_abandoned_requests(MPI_Request* requests, int count, const std::string& what) noexcept;

}  // namespace rfa::comm::mpi
