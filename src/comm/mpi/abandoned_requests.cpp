// SPDX-License-Identifier: BSD-3-Clause
#include "comm/mpi/abandoned_requests.hpp"

#include <chrono>
#include <cstdio>
#include <thread>

#include "comm/mpi/mpi_error.hpp"

namespace rfa::comm::mpi {

void complete_abandoned_requests(MPI_Request* requests, int count, const std::string& what) noexcept {
  if (!mpi_is_usable()) {
    std::fprintf(stderr, "rfa: %s was still pending at MPI_Finalize; its buffers may be incomplete\n", what.c_str());
    return;
  }
  // Poll instead of MPI_Waitall so that a wait that cannot end (some rank never started its
  // side) is reported instead of hanging silently.
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  auto next_report = start + std::chrono::seconds(10);
  for (;;) {
    int complete = 0;
    const int rc = MPI_Testall(count, requests, &complete, MPI_STATUSES_IGNORE);
    if (rc != MPI_SUCCESS) {
      std::fprintf(stderr, "rfa: %s (while completing %s, abandoned)\n", mpi_error_message(rc, "MPI_Testall").c_str(),
                   what.c_str());
      return;
    }
    if (complete) return;
    if (clock::now() >= next_report) {
      const long waited = long(std::chrono::duration_cast<std::chrono::seconds>(clock::now() - start).count());
      std::fprintf(stderr, "rfa: still completing %s that was destroyed before wait(), %ld s so far: "
                           "the other ranks have not finished their side\n", what.c_str(), waited);
      next_report += std::chrono::seconds(10);
    }
    std::this_thread::yield();
  }
}

}  // namespace rfa::comm::mpi
