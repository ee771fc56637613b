// SPDX-License-Identifier: BSD-3-Clause
// Completing MPI requests whose handle was destroyed before wait() (an Exchange's destructor,
// while an error unwinds a call or a context is destroyed): they are polled, since the peers
// are usually about to finish their side, but never past the communicator's deadline, so that
// destroying a context can never hang. Once the communicator has timed out, the peers are known
// to be late, stuck or gone: the requests are then given up at once, so that a call that timed
// out returns by its one deadline however many exchanges it had in flight. A wait longer than
// 10 s is reported on stderr. Never throws.
#pragma once

#include <mpi.h>

#include <memory>
#include <string>

namespace rfa::comm::mpi {

/// How requests that did not complete by the deadline are let go.
enum class Abandon {
  cancel_receive_first,  ///< requests[0] is a receive: cancelled (nothing may land after we return), the rest freed
  leave_to_mpi,          ///< a collective's request: neither cancelled nor freed (MPI forbids both); it leaks
};

/// What the requests' communicator knows when their handle is dropped.
enum class Peers {
  may_be_late,  ///< nothing has failed: the requests get the deadline to complete
  timed_out,    ///< the communicator already timed out: one test, then given up at once
};

/// What a communicator's timeout record (empty until it times out; may be absent) says of its peers.
inline Peers peers_after(const std::shared_ptr<std::string>& timed_out) {
  return timed_out && !timed_out->empty() ? Peers::timed_out : Peers::may_be_late;
}

/// Polls `count` requests until all are complete, for at most `timeout_s` seconds (0 or less:
/// no deadline), or tests them once if `peers` is Peers::timed_out. Returns true if they
/// completed. Otherwise the requests are let go as `abandon` says, a line on stderr names `what`
/// ("a ring exchange (tag 3, 4096 bytes)"), and it returns false: the caller's communicator must
/// then refuse further work. After MPI_Finalize it only reports that they were pending, and
/// returns false.
bool complete_abandoned_requests(MPI_Request* requests, int count, const std::string& what, double timeout_s,
                                 Peers peers, Abandon abandon) noexcept;

}  // namespace rfa::comm::mpi
