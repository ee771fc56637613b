// SPDX-License-Identifier: BSD-3-Clause
#include "comm/mpi/mpi_pending_collective.hpp"

#include "comm/mpi/abandoned_requests.hpp"
#include "comm/mpi/deadline.hpp"
#include "comm/mpi/mpi_error.hpp"

namespace rfa::comm::mpi {

bool MpiPendingCollective::test() {
  int complete = 0;
  check_mpi(MPI_Test(&request_, &complete, MPI_STATUS_IGNORE), ("MPI_Test (" + what_ + ")").c_str());
  return complete != 0;
}

void MpiPendingCollective::wait() {
  const int rc = wait_within(&request_, 1, MPI_STATUS_IGNORE, timeout_s_, [&](const int*) {
    // A collective cannot be cancelled: its request, datatype and buffers stay with MPI.
    request_ = MPI_REQUEST_NULL;
    datatype_.release();
    *timed_out_ = "a non-blocking " + what_ + " did not complete within " + seconds_text(timeout_s_);
    return *timed_out_ + ": at least one rank has not reached it (options.timeout_s or RFA_TIMEOUT_S sets the "
                         "deadline). The communicator is unusable from now on; destroy it";
  });
  check_mpi(rc, ("MPI_Wait (" + what_ + ")").c_str());
}

MpiPendingCollective::~MpiPendingCollective() {
  if (request_ != MPI_REQUEST_NULL) complete_abandoned_requests(&request_, 1, "a non-blocking " + what_);
}

}  // namespace rfa::comm::mpi
