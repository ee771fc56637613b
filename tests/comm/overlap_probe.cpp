// SPDX-License-Identifier: BSD-3-Clause
// Measures whether a ring exchange progresses while the CPU computes (docs/architecture.md §5), for the
// note in src/comm/communicator.hpp. Not a test: it prints numbers and asserts nothing.
//
//   mpiexec -n 2 ./comm_overlap_probe [bytes=4194304] [compute_us=5000] [repeats=30]
//
// For each mode every rank starts an exchange, computes for compute_us, then calls wait();
// the time left in wait() is the part of the transfer that did NOT overlap the compute.
//   alone:        no compute: wait() right away (the transfer's own time)
//   no polling:   compute without any MPI call
//   poll 100 us:  call test() every ~100 us of compute (what the engine does between tiles)
// "start us" is the time inside start_ring_exchange (posting the receive can already do the
// copy when the neighbour's request-to-send has arrived); "compute us" is the compute phase as it really ran (longer
// than asked when the machine is busy); "in test() us" is the time spent inside the polls.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "comm/mpi/mpi_communicator.hpp"

namespace {

using clock_type = std::chrono::steady_clock;

double micros(clock_type::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

// Busy floating-point work until `end`, polling `poll` every `poll_every` if given.
volatile double sink = 0;
template <class Poll>
void compute_until(clock_type::time_point end, clock_type::duration poll_every, Poll poll) {
  double acc[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  auto next_poll = clock_type::now() + poll_every;
  for (;;) {
    for (int i = 0; i < 256; ++i) {  // a few hundred ns of FMAs between clock reads
      for (double& a : acc) a = a * 0.999999 + 1e-7;
    }
    const auto now = clock_type::now();
    if (now >= end) break;
    if (poll_every.count() > 0 && now >= next_poll) {
      poll();
      next_poll = now + poll_every;
    }
  }
  sink = acc[0] + acc[7];
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const std::size_t bytes = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : std::size_t(4) << 20;
  const long compute_us = argc > 2 ? std::atol(argv[2]) : 5000;
  const int repeats = argc > 3 ? std::atoi(argv[3]) : 30;
  {
    int world_rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    rfa::comm::MpiCommunicator comm(MPI_COMM_WORLD, world_rank);
    std::vector<unsigned char> send(bytes, 1), recv(bytes, 0);

    struct Mode {
      const char* name;
      long compute_us;
      long poll_us;
    } modes[] = {{"alone", 0, 0}, {"no polling", compute_us, 0}, {"poll 100 us", compute_us, 100}};

    // Modes take turns within each round, so load from other processes on the machine
    // disturbs all of them alike.
    const int mode_count = int(sizeof(modes) / sizeof(modes[0]));
    std::vector<std::vector<double>> starts(mode_count), waits(mode_count), computes(mode_count), polls(mode_count);
    for (int rep = 0; rep < repeats + 2; ++rep) {  // two warm-up rounds
      for (int m = 0; m < mode_count; ++m) {
        comm.barrier();
        double polling = 0;
        const auto start = clock_type::now();
        rfa::comm::Exchange x = comm.start_ring_exchange(send.data(), recv.data(), bytes);
        const auto started = clock_type::now();
        compute_until(start + std::chrono::microseconds(modes[m].compute_us),
                      std::chrono::microseconds(modes[m].poll_us), [&] {
                        const auto t = clock_type::now();
                        x.test();
                        polling += micros(clock_type::now() - t);
                      });
        const auto before_wait = clock_type::now();
        x.wait();
        const auto end = clock_type::now();
        if (rep < 2) continue;
        starts[std::size_t(m)].push_back(micros(started - start));
        waits[std::size_t(m)].push_back(micros(end - before_wait));
        computes[std::size_t(m)].push_back(micros(before_wait - started));
        polls[std::size_t(m)].push_back(polling);
      }
    }
    // Both ranks' medians, printed by rank 0: in a rendezvous either side may do the copy.
    std::vector<double> mine;
    for (int m = 0; m < mode_count; ++m) {
      const auto& w = waits[std::size_t(m)];
      mine.insert(mine.end(), {median(starts[std::size_t(m)]), median(w), *std::min_element(w.begin(), w.end()),
                               median(computes[std::size_t(m)]), median(polls[std::size_t(m)])});
    }
    std::vector<double> all(mine.size() * std::size_t(comm.size()));
    comm.allgather(mine.data(), all.data(), mine.size() * sizeof(double));
    if (comm.rank() == 0) {
      std::printf("ranks=%d bytes=%zu compute=%ld us repeats=%d (medians; min of wait)\n", comm.size(), bytes,
                  compute_us, repeats);
      std::printf("%-5s %-12s %9s %10s %12s %11s %13s\n", "rank", "mode", "start us", "wait us", "min wait us",
                  "compute us", "in test() us");
      for (int r = 0; r < comm.size(); ++r) {
        for (int m = 0; m < mode_count; ++m) {
          const double* v = &all[mine.size() * std::size_t(r) + 5 * std::size_t(m)];
          std::printf("%-5d %-12s %9.1f %10.1f %12.1f %11.1f %13.1f\n", r, modes[m].name, v[0], v[1], v[2], v[3], v[4]);
        }
      }
    }
  }
  MPI_Finalize();
  return 0;
}
