// SPDX-License-Identifier: BSD-3-Clause
#include "comm/mpi/mpi_pending_collective.hpp"

#include "collective/deadline.hpp"
#include "collective/mpi_error.hpp"
#include "comm/mpi/abandoned_requests.hpp"

namespace rfa::comm::mpi {

bool MpiPendingCollective::test() {
  int complete = 0;
  collective::check_mpi(MPI_Test(&request_, &complete, MPI_STATUS_IGNORE), ("MPI_Test (" + what_ + ")").c_str());
  return complete != 0;
}

void MpiPendingCollective::wait() {
  const int rc = collective::wait_within(
      &request_, 1, MPI_STATUS_IGNORE, timeout_s_,
      [&](const int*) {
        // A collective cannot be cancelled: its request, datatype and buffers stay with MPI.
        request_ = MPI_REQUEST_NULL;
        datatype_.release();
        *timed_out_ = "a non-blocking " + what_ + " did not complete within " + collective::seconds_text(timeout_s_);
        return *timed_out_ +
               ": at least one rank has not reached it (options.timeout_s or RFA_TIMEOUT_S sets the "
               "deadline). The communicator is unusable from now on; destroy it";
      },
      wait_spin_);
  collective::check_mpi(rc, ("MPI_Wait (" + what_ + ")").c_str());
}

MpiPendingCollective::~MpiPendingCollective() {
  if (request_ == MPI_REQUEST_NULL) return;
  const std::string what = "a non-blocking " + what_;
  if (!complete_abandoned_requests(&request_, 1, what, timeout_s_, peers_after(timed_out_), Abandon::leave_to_mpi)) {
    datatype_.release();  // MPI may still use it
    if (timed_out_ && timed_out_->empty()) *timed_out_ = what + " was abandoned unfinished";
  }
}

}  // namespace rfa::comm::mpi
