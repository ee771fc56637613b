// SPDX-License-Identifier: BSD-3-Clause
#include "topology/collective_agreement.hpp"

#include <cstdlib>

#include "core/error.hpp"

namespace rfa::topology {

void check_mpi(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(rc, text, &length);
  fail(RFA_ERROR_MPI, "rfa topology: ", call, " failed: ", text);
}

void agree_on_failure(MPI_Comm comm, const std::function<void()>& step) {
  int rank = 0, size = 1;
  check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size");

  int code = RFA_SUCCESS;
  std::string message;
  try {
    step();
  } catch (const Error& e) {
    code = e.code();
    message = e.what();
  } catch (const std::exception& e) {
    code = RFA_ERROR_INTERNAL;
    message = e.what();
  }

  int first_failing = code == RFA_SUCCESS ? size : rank;
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &first_failing, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce");
  if (first_failing == size) return;

  check_mpi(MPI_Bcast(&code, 1, MPI_INT, first_failing, comm), "MPI_Bcast");
  broadcast_string(comm, message, first_failing);
  throw Error(static_cast<rfa_result_t>(code), message + " (raised on rank " + std::to_string(first_failing) + ")");
}

std::string agreed_env(MPI_Comm comm, const char* name) {
  const char* raw = std::getenv(name);
  const std::string mine = raw ? raw : "";
  int rank = 0;
  check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");

  std::string root_value = mine;
  broadcast_string(comm, root_value, 0);
  agree_on_failure(comm, [&] {
    if (mine != root_value) {
      fail(RFA_ERROR_INVALID_USAGE, "rfa topology: ", name, " differs between ranks: rank 0 has '",
           root_value, "', rank ", rank, " has '", mine, "'; set it alike on every rank");
    }
  });
  return mine;
}

void broadcast_string(MPI_Comm comm, std::string& text, int root) {
  int length = static_cast<int>(text.size());
  check_mpi(MPI_Bcast(&length, 1, MPI_INT, root, comm), "MPI_Bcast");
  text.resize(length);
  check_mpi(MPI_Bcast(&text[0], length, MPI_CHAR, root, comm), "MPI_Bcast");
}

void broadcast_ints(MPI_Comm comm, std::vector<int>& values, int root) {
  int count = static_cast<int>(values.size());
  check_mpi(MPI_Bcast(&count, 1, MPI_INT, root, comm), "MPI_Bcast");
  values.resize(count);
  check_mpi(MPI_Bcast(values.data(), count, MPI_INT, root, comm), "MPI_Bcast");
}

}  // namespace rfa::topology
