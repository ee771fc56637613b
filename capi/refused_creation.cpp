// SPDX-License-Identifier: BSD-3-Clause
#include "refused_creation.hpp"

#include <time.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "collective/deadline.hpp"
#include "core/environment.hpp"
#include "creation_agreement.hpp"
#include "mpi_thread_turn.hpp"

namespace rfa {
namespace capi {
namespace {

/// The creation's deadline as creation_timeout() reads it where the options are usable: their
/// timeout_s where the struct holds it and it is set, else RFA_TIMEOUT_S, else the default
/// (0: none). Read with the registry's parser, compiled for the baseline like this file.
double refused_timeout(const rfa_options_t* options) {
  const std::size_t end = offsetof(rfa_options_t, timeout_s) + sizeof options->timeout_s;
  if (options != nullptr && options->struct_size >= end && std::isfinite(options->timeout_s) &&
      options->timeout_s != 0.0)
    return options->timeout_s < 0.0 ? 0.0 : options->timeout_s;
  double seconds = 0.0;
  return parse_timeout_seconds(env_value(Env::timeout_s), &seconds) ? seconds : collective::kDefaultTimeoutSeconds;
}

/// Waits for `request` until `deadline` (MPI_Wtime; none where it is 0): true when it completed.
/// At the deadline the request is left to MPI, with its buffers.
bool wait_until(MPI_Request* request, double deadline) {
  for (;;) {
    int done = 0;
    if (MPI_Test(request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) return false;
    if (done) return true;
    if (deadline > 0.0 && MPI_Wtime() >= deadline) return false;
    const timespec nap = {0, 100000};  // 0.1 ms: the other ranks' replies come within a few
    nanosleep(&nap, nullptr);
  }
}

}  // namespace

void take_part_refused(MPI_Comm comm, const rfa_options_t* options, const char* reason) noexcept {
  int initialized = 0, finalized = 0, inter = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized || comm == MPI_COMM_NULL) return;
  // Where the creation refuses the communicator before its agreement (an intercommunicator),
  // or MPI's thread level refuses the call, the other ranks make no collective call either.
  if (MPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter) return;
  const MpiThreadTurn turn("rfa_context_create", std::nothrow);
  if (turn.refused()) return;
  int size = 0, rank = 0;
  if (MPI_Comm_size(comm, &size) != MPI_SUCCESS || MPI_Comm_rank(comm, &rank) != MPI_SUCCESS || size < 1) return;

  const double timeout = refused_timeout(options);
  const double deadline = timeout > 0.0 ? MPI_Wtime() + timeout : 0.0;
  // What MPI reads and writes lives on the heap and is left to MPI where a step ends at the
  // deadline (MPI may still use it): this rank's record, every rank's, the reason's length.
  const std::size_t records = std::size_t(size) + 1;
  auto* block = static_cast<std::int64_t*>(std::calloc(records * kCreationRecordLength + 1, sizeof(std::int64_t)));
  if (block == nullptr) return;
  std::int64_t* const mine = block;
  std::int64_t* const all = block + kCreationRecordLength;
  int* const length = reinterpret_cast<int*>(block + records * kCreationRecordLength);
  mine[0] = RFA_ERROR_UNSUPPORTED;
  MPI_Request request = MPI_REQUEST_NULL;
  if (MPI_Iallgather(mine, kCreationRecordLength, MPI_INT64_T, all, kCreationRecordLength, MPI_INT64_T, comm,
                     &request) != MPI_SUCCESS ||
      !wait_until(&request, deadline))
    return;
  // The lowest failing rank's reason goes to every rank (its length, then its text), as
  // agree_on_creation() broadcasts it.
  int root = 0;
  while (root < size && all[std::size_t(root) * kCreationRecordLength] == RFA_SUCCESS) ++root;
  if (root >= size) {  // cannot be: this rank's record is a failure
    std::free(block);
    return;
  }
  *length = rank == root ? int(std::strlen(reason)) : 0;
  if (MPI_Ibcast(length, 1, MPI_INT, root, comm, &request) != MPI_SUCCESS || !wait_until(&request, deadline)) return;
  char* text = rank == root ? const_cast<char*>(reason) : static_cast<char*>(std::malloc(std::size_t(*length) + 1));
  if (text == nullptr) return;
  if (MPI_Ibcast(text, *length, MPI_CHAR, root, comm, &request) != MPI_SUCCESS || !wait_until(&request, deadline))
    return;
  if (rank != root) std::free(text);
  std::free(block);
}

}  // namespace capi
}  // namespace rfa
