// SPDX-License-Identifier: BSD-3-Clause
#include "comm/mpi/abandoned_requests.hpp"

#include <chrono>
#include <cstdio>
#include <thread>

#include "collective/deadline.hpp"
#include "collective/mpi_error.hpp"

namespace rfa::comm::mpi {

bool complete_abandoned_requests(MPI_Request* requests, int count, const std::string& what, double timeout_s,
                                 Peers peers, Abandon abandon) noexcept {
  if (!collective::mpi_is_usable()) {
    std::fprintf(stderr, "rfa: %s was still pending at MPI_Finalize; its buffers may be incomplete\n", what.c_str());
    return false;
  }
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  const bool at_once = peers == Peers::timed_out;
  const bool bounded = at_once || (timeout_s > 0.0 && timeout_s <= 1e9);
  const double wait_s = at_once || !bounded ? 0.0 : timeout_s;
  const auto deadline = start + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(wait_s));
  auto next_report = start + std::chrono::seconds(10);
  for (;;) {
    int complete = 0;
    const int rc = MPI_Testall(count, requests, &complete, MPI_STATUSES_IGNORE);
    if (rc != MPI_SUCCESS) {
      std::fprintf(stderr, "rfa: %s (while completing %s, abandoned)\n",
                   collective::mpi_error_message(rc, "MPI_Testall").c_str(), what.c_str());
      return false;
    }
    if (complete) return true;
    const auto now = clock::now();
    if (bounded && now >= deadline) break;
    if (now >= next_report) {
      const long waited = long(std::chrono::duration_cast<std::chrono::seconds>(now - start).count());
      std::fprintf(stderr,
                   "rfa: still completing %s that was destroyed before wait(), %ld s so far: "
                   "the other ranks have not finished their side\n",
                   what.c_str(), waited);
      next_report += std::chrono::seconds(10);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  if (abandon == Abandon::cancel_receive_first) {
    for (int i = 0; i < count; ++i) {
      if (requests[i] == MPI_REQUEST_NULL) continue;
      if (i == 0) MPI_Cancel(&requests[i]);
      MPI_Request_free(&requests[i]);
    }
  }
  if (at_once) {
    std::fprintf(stderr, "rfa: gave up %s at once: the communicator had timed out already; it is left to MPI\n",
                 what.c_str());
  } else {
    std::fprintf(stderr,
                 "rfa: gave up completing %s after %s: the other ranks did not finish their side; it is "
                 "left to MPI and the communicator is unusable\n",
                 what.c_str(), collective::seconds_text(timeout_s).c_str());
  }
  return false;
}

}  // namespace rfa::comm::mpi
