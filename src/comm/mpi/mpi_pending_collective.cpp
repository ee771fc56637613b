#include "comm/mpi/mpi_pending_collective.hpp"

#include "comm/mpi/abandoned_requests.hpp"
#include "comm/mpi/mpi_error.hpp"

namespace rfa::comm::mpi {

bool MpiPendingCollective::test() {
  int complete = 0;
  check_mpi(MPI_Test(&request_, &complete, MPI_STATUS_IGNORE), ("MPI_Test (" + what_ + ")").c_str());
  return complete != 0;
}

void MpiPendingCollective::wait() {
  check_mpi(MPI_Wait(&request_, MPI_STATUS_IGNORE), ("MPI_Wait (" + what_ + ")").c_str());
}

MpiPendingCollective::~MpiPendingCollective() {
  if (request_ != MPI_REQUEST_NULL) complete_abandoned_requests(&request_, 1, "a non-blocking " + what_);
}

}  // namespace rfa::comm::mpi
