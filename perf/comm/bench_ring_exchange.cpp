// SPDX-License-Identifier: BSD-3-Clause
// rfa_comm_bench: the ring exchange of src/comm alone (every rank sends a buffer to the next
// ring position and receives one from the previous), per message size, with no attention
// around it. It bounds what the ring can hide: a K/V block of B*L*Hkv*d elements in the
// storage dtype travels once per step (twice, with fp32 dK/dV, in the backward). The peer is the
// same exchange in plain MPI (MPI_Irecv, MPI_Isend, MPI_Waitall on MPI_COMM_WORLD), the two
// taking turns repetition by repetition.
//
//   mpirun -np 2 --bind-to core rfa_comm_bench [--min-bytes N] [--max-bytes N] [--messages N] [--repeat N]
//                                              [--pause-ms MS] [--json FILE]
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "comm/mpi/mpi_communicator.hpp"
#include "core/error.hpp"
#include "mpi_program.hpp"
#include "option_errors.hpp"
#include "result_json.hpp"
#include "run_context.hpp"

namespace rfa {
namespace perf {
namespace {

struct CommOptions {
  std::int64_t min_bytes = 4 << 10, max_bytes = 64 << 20;
  int messages = 1, repeat = 10, warmup = 2, pause_ms = 0;
  bool peer = true;
  std::string json;
  bool help = false;
};

const char* kUsage = R"( [options]

Times the ring exchange of src/comm alone: every rank sends a buffer to the next ring position
and receives one from the previous. Per message size (x4 steps, and the largest last): the
slowest rank's time, the bandwidth of one link (bytes / time) and the spread over repetitions,
beside the peer: the same exchange in plain MPI (MPI_Irecv, MPI_Isend, MPI_Waitall), the two
taking turns repetition by repetition.

  --min-bytes N      smallest message (default 4096)
  --max-bytes N      largest message, always timed (default 67108864)
  --messages N       exchanges of that size in flight at once, as the engines send a block's K and V
                     together (2); bandwidth counts them all (default 1)
  --repeat N         timed exchanges per size (default 10, what the comparator needs)
  --warmup N         untimed exchanges per size first (default 2)
  --pause-ms MS      every rank idles MS milliseconds before each exchange, so that a shaped
                     link's token bucket refills (what a link passes at once after a pause:
                     perf/multinode/scale_check's burst; default 0, back to back)
  --no-peer          skip the MPI peer (what rfa's exchange alone costs the machine: the
                     multinode calibration counts the CPU time of a run)
  --json FILE        also write the results as JSON (rank 0), perf/'s result format
  --kokkos-help      Kokkos' own options
  --help             this text
)";

CommOptions parse(int argc, char** argv) {
  CommOptions o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    auto value = [&]() -> const char* {
      require(i + 1 < argc, flag, " needs a value (see --help)");
      return argv[++i];
    };
    if (flag == "--help" || flag == "-h")
      o.help = true;
    else if (flag == "--min-bytes")
      o.min_bytes = whole_number(flag, value(), 1);
    else if (flag == "--max-bytes")
      o.max_bytes = whole_number(flag, value(), 1);
    else if (flag == "--messages")
      o.messages = whole_int(flag, value(), 1);
    else if (flag == "--repeat")
      o.repeat = whole_int(flag, value(), 1);
    else if (flag == "--warmup")
      o.warmup = whole_int(flag, value(), 0);
    else if (flag == "--pause-ms")
      o.pause_ms = whole_int(flag, value(), 0);
    else if (flag == "--no-peer")
      o.peer = false;
    else if (flag == "--json")
      o.json = value();
    else
      fail(RFA_ERROR_INVALID_ARGUMENT, "unknown option '", flag, "' (see --help)");
  }
  require(o.min_bytes <= o.max_bytes, "--min-bytes (", o.min_bytes, ") is larger than --max-bytes (", o.max_bytes, ")");
  return o;
}

/// Collective: one exchange of each receive buffer's size per buffer, all in flight at once, timed
/// on every rank after `pause` idle; returns the slowest and fastest rank's time.
std::pair<double, double> timed_exchange(comm::Communicator& ring, const std::vector<char>& send,
                                         std::vector<std::vector<char>>& recv, std::chrono::milliseconds pause) {
  ring.barrier();
  std::this_thread::sleep_for(pause);  // after the barrier: the barrier's messages end the link's idle time
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<comm::Exchange> inflight;
  for (std::vector<char>& r : recv) inflight.push_back(ring.start_ring_exchange(send.data(), r.data(), send.size()));
  for (comm::Exchange& x : inflight) x.wait();
  const double mine = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::vector<double> all(std::size_t(ring.size()));
  ring.allgather(&mine, all.data(), sizeof mine);
  double lo = all[0], hi = all[0];
  for (double t : all) lo = std::min(lo, t), hi = std::max(hi, t);
  return {hi, lo};
}

/// The peer, collective: the same exchange in plain MPI on MPI_COMM_WORLD (ring positions are
/// its ranks): every receive from the previous rank and send to the next posted at once, then
/// MPI_Waitall, timed as timed_exchange times rfa's. Messages past INT_MAX bytes go in parts.
std::pair<double, double> timed_mpi_exchange(const std::vector<char>& send, std::vector<std::vector<char>>& recv,
                                             std::chrono::milliseconds pause) {
  int P = 1, me = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  const int next = (me + 1) % P, prev = (me + P - 1) % P;
  constexpr std::size_t kPart = std::size_t(1) << 30;
  MPI_Barrier(MPI_COMM_WORLD);
  std::this_thread::sleep_for(pause);
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<MPI_Request> requests;
  for (std::size_t m = 0; m < recv.size(); ++m)
    for (std::size_t at = 0; at < send.size(); at += kPart) {
      // One tag for all: MPI matches a pair's messages in the order they were posted, which is
      // the same on both sides (MPI guarantees tags up to 32767 only).
      const int n = int(std::min(kPart, send.size() - at)), tag = 0;
      requests.emplace_back();
      MPI_Irecv(recv[m].data() + at, n, MPI_BYTE, prev, tag, MPI_COMM_WORLD, &requests.back());
      requests.emplace_back();
      MPI_Isend(send.data() + at, n, MPI_BYTE, next, tag, MPI_COMM_WORLD, &requests.back());
    }
  MPI_Waitall(int(requests.size()), requests.data(), MPI_STATUSES_IGNORE);
  const double mine = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  double hi = 0, lo = 0;
  MPI_Allreduce(&mine, &hi, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(&mine, &lo, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
  return {hi, lo};
}

int bench(comm::Communicator& ring, const CommOptions& o) {
  const int P = ring.size(), me = ring.rank();
  if (me == 0) {
    std::printf(
        "rfa_comm_bench: ring exchange over %s, %d rank%s%s, %d message(s) at once, %d repetition(s) per size%s\n",
        ring.backend_name(), P, P == 1 ? "" : "s", P == 1 ? " (sending to itself)" : "", o.messages, o.repeat,
        o.pause_ms > 0 ? (", each after " + std::to_string(o.pause_ms) + " ms idle").c_str() : "");
    std::printf("%12s %10s %10s %10s %12s %12s %9s\n", "bytes", "median us", "min us", "max us", "GB/s (link)",
                "MPI GB/s", "rfa/MPI");
  }
  std::vector<BenchCase> cases;
  // x4 steps from --min-bytes, and --max-bytes itself last where the steps miss it (a caller
  // asks for the size of its blocks: the rate of smaller messages is not theirs).
  for (std::int64_t bytes = o.min_bytes;; bytes = bytes > o.max_bytes / 4 ? o.max_bytes : bytes * 4) {
    const auto n = static_cast<std::size_t>(bytes);
    // Each rank sends a byte of its own (me mod 255) and receives over 255, which none sends:
    // a transport that moved nothing, at any P (1 too), leaves a receive buffer unlike its sender's.
    constexpr char kUnsent = char(255);
    std::vector<char> send(n, static_cast<char>(me % 255));
    std::vector<std::vector<char>> recv(std::size_t(o.messages), std::vector<char>(n));
    const double moved = double(bytes) * o.messages;  // per rank and exchange
    const std::chrono::milliseconds pause(o.pause_ms);
    for (int w = 0; w < o.warmup; ++w) {
      timed_exchange(ring, send, recv, pause);
      if (o.peer) timed_mpi_exchange(send, recv, pause);
    }
    BenchCase c;
    c.name = "comm/ring_exchange/" + std::to_string(bytes) + (o.messages > 1 ? "x" + std::to_string(o.messages) : "");
    c.labels = {{"suite", "comm"}, {"strategy", "ring"}, {"dtype", "bytes"}, {"shape", std::to_string(bytes) + " B"}};
    c.counters["bytes_moved"] = moved * P;
    c.counters["message_bytes"] = double(bytes);
    c.counters["messages"] = double(o.messages);
    c.counters["pause_ms"] = double(o.pause_ms);
    std::vector<double> seconds, peer_seconds;
    const char expected = char(((me + P - 1) % P) % 255);
    bool ok = true, peer_ok = true;
    auto received = [&] {
      bool all = true;
      for (std::vector<char>& b : recv) {
        all = all && std::all_of(b.begin(), b.end(), [&](char x) { return x == expected; });
        std::fill(b.begin(), b.end(), kUnsent);
      }
      return all;
    };
    for (std::vector<char>& b : recv) std::fill(b.begin(), b.end(), kUnsent);
    for (int r = 0; r < o.repeat; ++r) {
      const auto [slowest, fastest] = timed_exchange(ring, send, recv, pause);
      ok = received() && ok;
      Repetition rep;
      rep.seconds = slowest;
      rep.counters["gbytes_per_s"] = moved / slowest * 1e-9;
      rep.counters["rank_max_s"] = slowest;
      rep.counters["rank_min_s"] = fastest;
      if (o.peer) {
        const double peer = timed_mpi_exchange(send, recv, pause).first;
        peer_ok = received() && peer_ok;
        rep.counters["peer_s"] = peer;
        rep.counters["peer_gbytes_per_s"] = moved / peer * 1e-9;
        peer_seconds.push_back(peer);
      }
      c.repetitions.push_back(rep);
      seconds.push_back(slowest);
    }
    // Every repetition's received bytes are the previous rank's, checked on every rank (the
    // peer's too: a wrong peer is no figure to compare with).
    c.counters["correct"] = ring.allreduce(ok ? 1 : 0, comm::ReduceOp::min) == 1;
    const bool peer_correct = ring.allreduce(peer_ok ? 1 : 0, comm::ReduceOp::min) == 1;
    if (me == 0) {
      const double mid = median(seconds);
      char peer_text[32] = "           -         -";
      if (o.peer) {
        const double peer_mid = median(peer_seconds);
        std::snprintf(peer_text, sizeof peer_text, "%12.2f %9.2f", moved / peer_mid * 1e-9, peer_mid / mid);
      }
      std::printf("%12lld %10.1f %10.1f %10.1f %12.2f %s%s%s\n", (long long)bytes, 1e6 * mid,
                  1e6 * *std::min_element(seconds.begin(), seconds.end()),
                  1e6 * *std::max_element(seconds.begin(), seconds.end()), moved / mid * 1e-9, peer_text,
                  c.counters["correct"] ? "" : "  WRONG DATA", peer_correct ? "" : "  WRONG DATA (MPI peer)");
    }
    cases.push_back(std::move(c));
    if (bytes == o.max_bytes) break;
  }
  if (me == 0 && !o.json.empty()) {
    ContextFields context = collect_run_context("rfa_comm_bench");
    set_field(context, "suite", "comm");
    set_field(context, "ranks", std::to_string(P));
    set_field(context, "ring_order", "identity");
    set_field(context, "strategy", "ring");
    set_field(context, "communicator", ring.backend_name());
    set_field(context, "peer", o.peer ? "MPI_Irecv/MPI_Isend/MPI_Waitall" : "none");
    write_results_json(o.json, context, cases);
    std::printf("results written to %s\n", o.json.c_str());
  }
  bool all_ok = true;
  for (const auto& c : cases) all_ok = all_ok && c.counters.at("correct") > 0;
  return all_ok ? 0 : 1;
}

}  // namespace
}  // namespace perf
}  // namespace rfa

int main(int argc, char** argv) {
  return rfa::perf::run_mpi_program(argc, argv, "rfa_comm_bench", [](int world_rank, int args, char** argv_) {
    rfa::perf::CommOptions opts;
    try {
      opts = rfa::perf::refused_as_rfa_error([&] { return rfa::perf::parse(args, argv_); });
    } catch (const rfa::Error& e) {
      // Same argv on every rank, same verdict: rank 0 speaks.
      if (world_rank == 0) std::fprintf(stderr, "rfa_comm_bench: error: %s\n", e.what());
      return 2;
    }
    if (opts.help) {
      if (world_rank == 0) std::printf("usage: mpirun -np P %s%s", argv_[0], rfa::perf::kUsage);
      return 0;
    }
    auto ring = rfa::comm::make_mpi_communicator(MPI_COMM_WORLD, world_rank);
    return rfa::perf::bench(*ring, opts);
  });
}
