// One started non-blocking MPI collective (MPI_Iallgather, ...) as an Exchange: test() and
// wait() complete its request, and the destructor completes an unfinished one (collectives
// cannot be cancelled), reporting on stderr every 10 s if it does not end.
#pragma once

#include <mpi.h>

#include <memory>
#include <string>

#include "comm/communicator.hpp"
#include "comm/mpi/byte_datatype.hpp"

namespace rfa::comm::mpi {

class MpiPendingCollective final : public detail::PendingExchange {
 public:
  /// Takes the started request and the datatype it uses (which must outlive it).
  MpiPendingCollective(MPI_Request request, std::unique_ptr<ByteDatatype> datatype, std::string what)
      : request_(request), datatype_(std::move(datatype)), what_(std::move(what)) {}
  ~MpiPendingCollective() override;

  bool test() override;
  void wait() override;

 private:
  MPI_Request request_;
  std::unique_ptr<ByteDatatype> datatype_;
  std::string what_;
};

}  // namespace rfa::comm::mpi
