// SPDX-License-Identifier: BSD-3-Clause
#include "collective/bounded_collectives.hpp"

#include <cstring>
#include <string>
#include <vector>

#include "collective/deadline.hpp"
#include "collective/mpi_error.hpp"

namespace rfa::collective {
namespace {

std::size_t bytes_of(MPI_Datatype type, int count, const char* what) {
  int size = 0;
  check_mpi(MPI_Type_size(type, &size), what);
  return std::size_t(size) * std::size_t(count > 0 ? count : 0);
}

using ParkedBytes = Parked<unsigned char>;

/// Room for the bytes a collective works on: at least one, so that data() is never null.
std::vector<unsigned char> room(std::size_t bytes) { return std::vector<unsigned char>(bytes ? bytes : 1); }

void complete(MPI_Request& request, std::initializer_list<ParkedBytes*> parked, const char* what) {
  const double timeout = current_timeout();
  const int rc = wait_within(&request, 1, MPI_STATUS_IGNORE, timeout, [&](const int*) {
    for (ParkedBytes* p : parked) p->abandon();
    return std::string(what) + " did not complete within " + seconds_text(timeout) +
           ": not every rank of the communicator took part (a rank is late, stuck or gone, or its earlier call "
           "timed out; options.timeout_s or RFA_TIMEOUT_S sets the deadline)";
  });
  check_mpi(rc, what);
}

}  // namespace

void allreduce_within(MPI_Comm comm, void* values, int count, MPI_Datatype type, MPI_Op op, const char* what) {
  const std::size_t bytes = bytes_of(type, count, what);
  ParkedBytes parked(room(bytes));
  std::memcpy(parked.data(), values, bytes);
  MPI_Request request = MPI_REQUEST_NULL;
  check_mpi(MPI_Iallreduce(MPI_IN_PLACE, parked.data(), count, type, op, comm, &request), what);
  complete(request, {&parked}, what);
  std::memcpy(values, parked.data(), bytes);
}

void bcast_within(MPI_Comm comm, void* buffer, int count, MPI_Datatype type, int root, const char* what) {
  const std::size_t bytes = bytes_of(type, count, what);
  ParkedBytes parked(room(bytes));
  std::memcpy(parked.data(), buffer, bytes);
  MPI_Request request = MPI_REQUEST_NULL;
  check_mpi(MPI_Ibcast(parked.data(), count, type, root, comm, &request), what);
  complete(request, {&parked}, what);
  std::memcpy(buffer, parked.data(), bytes);
}

void allgather_within(MPI_Comm comm, const void* send, void* recv, int count, MPI_Datatype type, const char* what) {
  int size = 1;
  check_mpi(MPI_Comm_size(comm, &size), what);
  const std::size_t bytes = bytes_of(type, count, what);
  ParkedBytes in(room(bytes)), out(room(bytes * std::size_t(size)));
  std::memcpy(in.data(), send, bytes);
  MPI_Request request = MPI_REQUEST_NULL;
  check_mpi(MPI_Iallgather(in.data(), count, type, out.data(), count, type, comm, &request), what);
  complete(request, {&in, &out}, what);
  std::memcpy(recv, out.data(), bytes * std::size_t(size));
}

}  // namespace rfa::collective
