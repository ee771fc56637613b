// SPDX-License-Identifier: BSD-3-Clause
#include "comm/mpi/mpi_exchange.hpp"

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "collective/deadline.hpp"
#include "collective/mpi_error.hpp"
#include "comm/mpi/abandoned_requests.hpp"
#include "core/error.hpp"

namespace rfa::comm::mpi {

MpiPendingExchange::MpiPendingExchange(const void* send, std::size_t send_bytes, void* recv, std::size_t recv_bytes,
                                       const ExchangeRoute& route)
    : recv_type_(recv_bytes, route.max_count),
      send_type_(send_bytes, route.max_count),
      recv_bytes_(recv_bytes),
      send_bytes_(send_bytes),
      prev_(route.prev),
      next_(route.next),
      tag_(route.tag),
      timeout_s_(route.timeout_s),
      wait_spin_(route.wait_spin),
      timed_out_(route.timed_out) {
  if (recv_bytes > 0)
    collective::check_mpi(
        MPI_Irecv(recv, recv_type_.count(), recv_type_.type(), route.prev, route.tag, route.comm, &requests_[kRecv]),
        "MPI_Irecv");
  if (send_bytes == 0) return;
  const int rc =
      MPI_Isend(send, send_type_.count(), send_type_.type(), route.next, route.tag, route.comm, &requests_[kSend]);
  if (rc != MPI_SUCCESS) {
    // A receive nobody will complete may be cancelled (unlike a send), and must be, or the
    // destructor would wait for it forever.
    if (requests_[kRecv] != MPI_REQUEST_NULL) {
      MPI_Cancel(&requests_[kRecv]);
      MPI_Wait(&requests_[kRecv], MPI_STATUS_IGNORE);
    }
    collective::throw_mpi_error(rc, "MPI_Isend");
  }
}

void MpiPendingExchange::check_completed(int rc, const char* call) {
  if (rc == MPI_ERR_IN_STATUS) {
    for (const MPI_Status& s : statuses_) collective::check_mpi(s.MPI_ERROR, call);
  }
  collective::check_mpi(rc, call);
  if (recv_bytes_ == 0) return;  // nothing was received (the status of a null request is empty)
  MPI_Count received = 0;
#if MPI_VERSION >= 4  // the large-count form; MPI 4.1 deprecates the _x one
  collective::check_mpi(MPI_Get_elements_c(&statuses_[kRecv], recv_type_.type(), &received), "MPI_Get_elements_c");
#else
  collective::check_mpi(MPI_Get_elements_x(&statuses_[kRecv], recv_type_.type(), &received), "MPI_Get_elements_x");
#endif
  // Counted in basic elements of the type, i.e. bytes; MPI_UNDEFINED (negative) if partial.
  if (received != MPI_Count(recv_bytes_)) {
    fail(RFA_ERROR_INVALID_USAGE, "ring exchange (tag ", tag_, ") expected ", recv_bytes_, " bytes from ring position ",
         prev_, " but received ", received < 0 ? std::string("a different amount") : std::to_string(received),
         ": every rank must start the same exchanges, in the same order, with the same sizes");
  }
}

bool MpiPendingExchange::test() {
  int complete = 0;
  const int rc = MPI_Testall(2, requests_, &complete, statuses_);
  if (rc == MPI_SUCCESS && !complete) return false;
  check_completed(rc, "MPI_Testall");
  return true;
}

void MpiPendingExchange::wait() {
  const int rc = collective::wait_within(
      requests_, 2, statuses_, timeout_s_,
      [&](const int* done) {
        std::string who;
        if (!done[kRecv]) {
          who = "ring position " + std::to_string(prev_) + " did not send its block";
          // Nothing may land in the receive buffer after we return: cancel, then let go.
          MPI_Cancel(&requests_[kRecv]);
          MPI_Request_free(&requests_[kRecv]);
        }
        if (!done[kSend]) {
          who += (who.empty() ? "" : ", and ") + std::string("ring position ") + std::to_string(next_) +
                 " did not receive this rank's block";
          MPI_Request_free(&requests_[kSend]);
        }
        const std::string what = "ring exchange (tag " + std::to_string(tag_) + ", " + std::to_string(send_bytes_) +
                                 " bytes) did not complete within " + collective::seconds_text(timeout_s_) + ": " + who;
        if (timed_out_) *timed_out_ = what;
        return what + " (it is late, stuck or gone; options.timeout_s or RFA_TIMEOUT_S sets the deadline)";
      },
      wait_spin_);
  ;
  check_completed(rc, "MPI_Waitall");
}

MpiPendingExchange::~MpiPendingExchange() {
  if (requests_[kRecv] == MPI_REQUEST_NULL && requests_[kSend] == MPI_REQUEST_NULL) return;
  static_assert(kRecv == 0, "the receive is the request complete_abandoned_requests cancels");
  const std::string what =
      "a ring exchange (tag " + std::to_string(tag_) + ", " + std::to_string(send_bytes_) + " bytes)";
  if (!complete_abandoned_requests(requests_, 2, what, timeout_s_, peers_after(timed_out_),
                                   Abandon::cancel_receive_first) &&
      timed_out_ && timed_out_->empty()) {
    *timed_out_ = what + " was abandoned unfinished";
  }
}

}  // namespace rfa::comm::mpi
