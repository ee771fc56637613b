// SPDX-License-Identifier: BSD-3-Clause
// One started non-blocking MPI collective (MPI_Iallgather, ...) as an Exchange: test() and
// wait() complete its request (wait() under the communicator's deadline, comm/mpi/deadline.hpp),
// and the destructor completes an unfinished one (collectives cannot be cancelled), reporting
// on stderr every 10 s if it does not end.
#pragma once

#include <mpi.h>

#include <chrono>
#include <memory>
#include <string>

#include "comm/communicator.hpp"
#include "comm/mpi/byte_datatype.hpp"

namespace rfa::comm::mpi {

class MpiPendingCollective final : public detail::PendingExchange {
 public:
  /// Takes the started request and the datatype it uses (which must outlive it). wait() polls
  /// without pause for `wait_spin` (wait_within) and gives up after `timeout_s` seconds (0:
  /// never) with RFA_ERROR_TIMEOUT, recording why in `timed_out` (the communicator's flag that
  /// makes it unusable).
  MpiPendingCollective(MPI_Request request, std::unique_ptr<ByteDatatype> datatype, std::string what, double timeout_s,
                       std::chrono::milliseconds wait_spin, std::shared_ptr<std::string> timed_out)
      : request_(request),
        datatype_(std::move(datatype)),
        what_(std::move(what)),
        timeout_s_(timeout_s),
        wait_spin_(wait_spin),
        timed_out_(std::move(timed_out)) {}
  ~MpiPendingCollective() override;

  bool test() override;
  void wait() override;

 private:
  MPI_Request request_;
  std::unique_ptr<ByteDatatype> datatype_;
  std::string what_;
  double timeout_s_;
  std::chrono::milliseconds wait_spin_;
  std::shared_ptr<std::string> timed_out_;
};

}  // namespace rfa::comm::mpi
