// SPDX-License-Identifier: BSD-3-Clause
#include "collective/agree_on_failure.hpp"

#include "collective/bounded_collectives.hpp"
#include "collective/mpi_error.hpp"
#include "core/environment.hpp"
#include "core/error.hpp"

namespace rfa::collective {

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
  allreduce_within(comm, &first_failing, 1, MPI_INT, MPI_MIN,
                   "rfa: the agreement on a step's failures (MPI_Iallreduce)");
  if (first_failing == size) return;

  bcast_within(comm, &code, 1, MPI_INT, first_failing, "rfa: the failing rank's code (MPI_Ibcast)");
  broadcast_string(comm, message, first_failing);
  throw Error(static_cast<rfa_result_t>(code), message + " (raised on rank " + std::to_string(first_failing) + ")");
}

std::string agreed_env(MPI_Comm comm, Env variable) {
  const char* name = env_name(variable);
  const char* raw = env_value(variable);
  const std::string mine = raw ? raw : "";
  int rank = 0;
  check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");

  std::string root_value = mine;
  broadcast_string(comm, root_value, 0);
  agree_on_failure(comm, [&] {
    if (mine != root_value) {
      fail(RFA_ERROR_INVALID_USAGE, name, " differs between ranks: rank 0 has '", root_value, "', rank ", rank,
           " has '", mine, "'; set it alike on every rank");
    }
  });
  return mine;
}

void broadcast_string(MPI_Comm comm, std::string& text, int root) {
  int length = static_cast<int>(text.size());
  bcast_within(comm, &length, 1, MPI_INT, root, "rfa: a text's length (MPI_Ibcast)");
  text.resize(std::size_t(length));
  bcast_within(comm, &text[0], length, MPI_CHAR, root, "rfa: a text (MPI_Ibcast)");
}

void broadcast_ints(MPI_Comm comm, std::vector<int>& values, int root) {
  int count = static_cast<int>(values.size());
  bcast_within(comm, &count, 1, MPI_INT, root, "rfa: a list's length (MPI_Ibcast)");
  values.resize(std::size_t(count));
  bcast_within(comm, values.data(), count, MPI_INT, root, "rfa: a list (MPI_Ibcast)");
}

}  // namespace rfa::collective
