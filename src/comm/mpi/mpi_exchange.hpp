// SPDX-License-Identifier: BSD-3-Clause
// One ring exchange over MPI: a nonblocking receive from prev and send to next, with the tag
// that keeps it apart from the other exchanges in flight.
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "comm/communicator.hpp"
#include "comm/mpi/byte_datatype.hpp"

namespace rfa::comm::mpi {

/// Where and how an exchange goes; filled by MpiCommunicator.
struct ExchangeRoute {
  MPI_Comm comm = MPI_COMM_NULL;
  int next = 0;
  int prev = 0;
  int tag = 0;
  std::size_t max_count = 0;               // see ByteDatatype
  double timeout_s = 0;                    // wait()'s deadline; 0: none (see deadline.hpp)
  std::chrono::milliseconds wait_spin{0};  // how long wait() polls before it naps (wait_within)
  std::shared_ptr<std::string> timed_out;  // set on a timeout: the communicator is unusable
};

class MpiPendingExchange final : public detail::PendingExchange {
 public:
  /// Posts the receive, then the send. Throws rfa::Error(RFA_ERROR_MPI) if posting fails
  /// (a receive already posted is cancelled first, so nothing is left pending).
  MpiPendingExchange(const void* send, void* recv, std::size_t bytes, const ExchangeRoute& route)
      : MpiPendingExchange(send, bytes, recv, bytes, route) {}
  /// With sizes of their own each way; a side of zero bytes posts nothing (its peer's matching
  /// side is zero too).
  MpiPendingExchange(const void* send, std::size_t send_bytes, void* recv, std::size_t recv_bytes,
                     const ExchangeRoute& route);
  /// Completes the exchange if it is unfinished (see Exchange); never throws.
  ~MpiPendingExchange() override;

  bool test() override;
  /// Throws RFA_ERROR_TIMEOUT naming the silent neighbour when the route's deadline passes;
  /// the exchange is then abandoned (receive cancelled, send released) and counts as done.
  void wait() override;

 private:
  // Checks the statuses of a completed exchange: an MPI error or a receive of the wrong size.
  void check_completed(int rc, const char* call);

  enum { kRecv = 0, kSend = 1 };
  MPI_Request requests_[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  MPI_Status statuses_[2];
  ByteDatatype recv_type_;  // kept until completion: the received size is read through it
  ByteDatatype send_type_;
  std::size_t recv_bytes_, send_bytes_;
  int prev_;
  int next_;
  int tag_;
  double timeout_s_;
  std::chrono::milliseconds wait_spin_;
  std::shared_ptr<std::string> timed_out_;
};

}  // namespace rfa::comm::mpi
