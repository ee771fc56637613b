// SPDX-License-Identifier: BSD-3-Clause
// One forward or backward across "nodes" while scripts/multinode/nodes.sh breaks something: a
// link cut, a rank killed, a link slowed (tests/multinode/fault_case.sh runs the cases). Each rank
// that lives through the call writes what happened to $RFA_MULTINODE_DIR/verdict.RANK, one line of
// key=value words, which the case's script judges:
//   rank, host, rc (the call's code), message, started/returned (seconds since the epoch, the
//   clock the harness stamps its faults with), inputs (untouched or CHANGED: every input of the
//   call compared byte for byte with a copy taken before it, after the call and after the linger
//   below), canaries (intact or BROKEN), error (the largest error against float64 with --expect
//   exact, else -).
// After a failed call the rank destroys the context (which never waits) and lingers: for
// --linger seconds it drives MPI's progress while blocks of the sizes rfa's transfers use sit in
// the heap filled with a pattern. A buffer of an abandoned transfer that rfa freed and the heap
// gave to a canary would be written by the late transfer (the harness brings a cut link back
// up meanwhile): the canary breaks. Then the rank waits for the harness to end the job (ranks
// cannot all finish MPI once a link is gone).
//
//   link_fault_test --op forward|backward --timeout S --seq N [--expect error|exact] [--linger S]
//                   [--dtype fp32|bf16] [--mark NAME]
// The rank at ring position 0 creates $RFA_MULTINODE_DIR/NAME (default: the op's name) just
// before the call: the harness's --fault on=NAME acts then.
// A rank that dies of a signal during the call writes crash.RANK (the signal and a backtrace).
// A process that its MPI library ends with exit() during the call (Open MPI's TCP transport
// aborts a rank whose connection to a killed one fails, whatever the communicator's error
// handler; rfa cannot return there) writes rc=ENDED_BY_MPI from an exit handler, so the case
// can tell it from a rank that hangs (no verdict) or crashes (no verdict either).
#include <execinfo.h>
#include <fcntl.h>
#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "capi_reference.hpp"
#include "rfa/rfa_mpi.h"

namespace {

struct Args {
  std::string op = "forward";
  double timeout = 5.0;
  int64_t seq = 4096;
  bool expect_exact = false;
  double linger = 0.0;
  rfa_dtype_t dtype = RFA_DTYPE_FLOAT32;
  std::string mark;
};

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr,
               "link_fault_test: %s\nusage: link_fault_test --op forward|backward --timeout S --seq N "
               "[--expect error|exact] [--linger S] [--dtype fp32|bf16] [--mark NAME]\n",
               why.c_str());
  std::exit(2);
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) usage("missing value after " + flag);
    const std::string value = argv[++i];
    if (flag == "--op") {
      if (value != "forward" && value != "backward") usage("--op takes forward or backward");
      a.op = value;
    } else if (flag == "--timeout") {
      a.timeout = std::atof(value.c_str());
    } else if (flag == "--seq") {
      a.seq = std::atoll(value.c_str());
    } else if (flag == "--expect") {
      if (value != "error" && value != "exact") usage("--expect takes error or exact");
      a.expect_exact = value == "exact";
    } else if (flag == "--linger") {
      a.linger = std::atof(value.c_str());
    } else if (flag == "--dtype") {
      if (value != "fp32" && value != "bf16") usage("--dtype takes fp32 or bf16");
      a.dtype = value == "fp32" ? RFA_DTYPE_FLOAT32 : RFA_DTYPE_BFLOAT16;
    } else if (flag == "--mark") {
      a.mark = value;
    } else {
      usage("unknown option " + flag);
    }
  }
  if (a.mark.empty()) a.mark = a.op;
  return a;
}

double now() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

/// Heap blocks of the given sizes filled with a pattern, checked later.
struct Canaries {
  std::vector<std::vector<unsigned char>> blocks;
  explicit Canaries(const std::vector<std::size_t>& sizes) {
    for (int copy = 0; copy < 8; ++copy)
      for (std::size_t n : sizes) blocks.emplace_back(n, static_cast<unsigned char>(0xA5));
  }
  bool intact() const {
    for (const auto& b : blocks)
      if (std::any_of(b.begin(), b.end(), [](unsigned char c) { return c != 0xA5; })) return false;
    return true;
  }
};

/// What the exit handler writes if the process ends during the call, before its verdict.
struct PendingVerdict {
  std::string path;  // verdict.RANK; empty until the call starts
  std::string head;  // "rank=... host=..."
  double started = 0.0;
  bool written = false;
};
PendingVerdict pending;

void write_verdict(const std::string& path, const std::string& line) {
  std::ofstream(path + ".tmp") << line;
  std::rename((path + ".tmp").c_str(), path.c_str());
  std::fputs(line.c_str(), stderr);
}

char crash_path[512];
void on_crash(int sig) {
  const int fd = open(crash_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0) {
    char text[32];
    const int n = std::snprintf(text, sizeof text, "signal %d\n", sig);
    if (n > 0) (void)!write(fd, text, std::size_t(n));
    void* frames[64];
    backtrace_symbols_fd(frames, backtrace(frames, 64), fd);
    close(fd);
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

void verdict_at_exit() {
  if (pending.path.empty() || pending.written) return;
  std::ostringstream line;
  line.precision(17);
  line << pending.head << " rc=ENDED_BY_MPI started=" << pending.started << " returned=" << now()
       << " inputs=- canaries=- error=- message=the_process_was_ended_by_its_MPI_library_during_the_call\n";
  write_verdict(pending.path, line.str());
}

/// The code's name as rfa.h spells it: the verdict's rc word.
const char* code_name(rfa_result_t rc) {
  static const char* const names[] = {"RFA_SUCCESS",
                                      "RFA_ERROR_INVALID_ARGUMENT",
                                      "RFA_ERROR_INVALID_USAGE",
                                      "RFA_ERROR_UNSUPPORTED",
                                      "RFA_ERROR_OUT_OF_MEMORY",
                                      "RFA_ERROR_INTERNAL",
                                      "RFA_ERROR_MPI",
                                      "RFA_ERROR_NCCL",
                                      "RFA_ERROR_CUDA",
                                      "RFA_ERROR_HWLOC",
                                      "RFA_ERROR_KOKKOS",
                                      "RFA_ERROR_VERSION_MISMATCH",
                                      "RFA_ERROR_TIMEOUT",
                                      "RFA_ERROR_CALL_MISMATCH",
                                      "RFA_ERROR_NONFINITE"};
  const int i = int(rc);
  return i >= 0 && i < int(sizeof names / sizeof names[0]) ? names[i] : "unknown";
}

std::string one_line(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  // As docs/reliability.md advises: Open MPI's TCP transport writes with writev(), which raises
  // SIGPIPE when the peer's process is gone; by default that kills a surviving rank before rfa
  // can return its timeout.
  signal(SIGPIPE, SIG_IGN);
  MPI_Init(&argc, &argv);
  const Args a = parse(argc, argv);
  const char* dir_env = std::getenv("RFA_MULTINODE_DIR");
  if (!dir_env) usage("runs under scripts/multinode/nodes.sh (RFA_MULTINODE_DIR is not set)");
  const std::string dir = dir_env;
  int rank = 0, P = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  char host[256] = {0};
  gethostname(host, sizeof host - 1);

  const int64_t H = 4, D = 64, S = a.seq;
  rfa_options_t o;
  rfa_options_init(&o);
  o.dtype = a.dtype;
  o.layout = RFA_LAYOUT_ZIGZAG;
  o.mask = RFA_MASK_CAUSAL;
  o.seq_total = S;
  o.batch = 1;
  o.heads = H;
  o.kv_heads = H;
  o.head_dim = D;
  o.timeout_s = a.timeout;
  rfa_context_t ctx = nullptr;
  if (rfa_context_create(MPI_COMM_WORLD, &o, &ctx) != RFA_SUCCESS) {
    std::fprintf(stderr, "rank %d: rfa_context_create failed: %s\n", rank, rfa_get_last_error_message());
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  int64_t L = 0;
  int position = 0;
  rfa_context_get_local_seq(ctx, &L);
  rfa_context_get_position(ctx, &position);
  std::vector<int64_t> positions(static_cast<std::size_t>(L));
  rfa_context_get_local_positions(ctx, positions.data(), L);

  // Inputs rounded to the dtype, the same on every rank; the reference (only with --expect exact,
  // a float64 attention over the whole sequence) sees the rounded values.
  using rfa_capi_test::Stored;
  Stored gq(a.dtype, std::size_t(S * H * D)), gk(a.dtype, std::size_t(S * H * D)), gv(a.dtype, std::size_t(S * H * D)),
      gdo(a.dtype, std::size_t(S * H * D));
  const auto q = gq.assign(rfa::test::random_values(gq.size(), 21)),
             k = gk.assign(rfa::test::random_values(gk.size(), 22)),
             v = gv.assign(rfa::test::random_values(gv.size(), 23)),
             dout = gdo.assign(rfa::test::random_values(gdo.size(), 24));
  const std::size_t local = std::size_t(L * H * D);
  Stored lq(a.dtype, local), lk(a.dtype, local), lv(a.dtype, local), ldo(a.dtype, local), lout(a.dtype, local),
      ldq(a.dtype, local), ldk(a.dtype, local), ldv(a.dtype, local);
  rfa_scatter_bshd(ctx, H, gq.data(), lq.data());
  rfa_scatter_bshd(ctx, H, gk.data(), lk.data());
  rfa_scatter_bshd(ctx, H, gv.data(), lv.data());
  rfa_scatter_bshd(ctx, H, gdo.data(), ldo.data());
  std::vector<float> lse(std::size_t(H * L));

  const bool backward = a.op == "backward";
  if (backward && rfa_forward(ctx, lq.data(), lk.data(), lv.data(), lout.data(), lse.data()) != RFA_SUCCESS) {
    std::fprintf(stderr, "rank %d: the forward before the backward failed: %s\n", rank, rfa_get_last_error_message());
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  // Every input of the call, copied: the call must leave them as they are, whatever happens.
  const std::size_t bytes = local * rfa::dtype_size(a.dtype);
  std::vector<const Stored*> inputs = {&lq, &lk, &lv};
  if (backward) inputs.insert(inputs.end(), {&lout, &ldo});
  std::vector<std::vector<unsigned char>> before;
  for (const Stored* t : inputs) {
    const auto* from = static_cast<const unsigned char*>(t->data());
    before.emplace_back(from, from + bytes);
  }
  const std::vector<float> lse_before = lse;
  auto inputs_untouched = [&] {
    for (std::size_t i = 0; i < inputs.size(); ++i)
      if (std::memcmp(inputs[i]->data(), before[i].data(), bytes) != 0) return false;
    return !backward || std::memcmp(lse.data(), lse_before.data(), lse.size() * sizeof(float)) == 0;
  };

  MPI_Barrier(MPI_COMM_WORLD);
  if (position == 0) {
    std::ofstream mark(dir + "/" + a.mark);
    mark.precision(17);
    mark << now() << "\n";
  }
  const double started = now();
  {
    std::ostringstream head;
    head << "rank=" << rank << " position=" << position << " host=" << host;
    pending.head = head.str();
    pending.started = started;
    pending.path = dir + "/verdict." + std::to_string(rank);
    std::atexit(verdict_at_exit);
    std::snprintf(crash_path, sizeof crash_path, "%s/crash.%d", dir.c_str(), rank);
    for (int sig : {SIGSEGV, SIGBUS, SIGABRT, SIGTERM, SIGFPE, SIGILL}) signal(sig, on_crash);
  }
  const rfa_result_t rc = backward ? rfa_backward(ctx, lq.data(), lk.data(), lv.data(), lout.data(), ldo.data(),
                                                  lse.data(), ldq.data(), ldk.data(), ldv.data())
                                   : rfa_forward(ctx, lq.data(), lk.data(), lv.data(), lout.data(), lse.data());
  const double returned = now();
  const std::string message = rc == RFA_SUCCESS ? "" : one_line(rfa_get_last_error_message());
  bool untouched = inputs_untouched();

  std::string error = "-";
  if (a.expect_exact && rc == RFA_SUCCESS) {
    using rfa_capi_test::max_error_bshd;
    const rfa::reference::Problem p = rfa_capi_test::reference_problem(o, {});
    std::vector<double> ro, rl, rdq, rdk, rdv;
    double worst = 0.0;
    if (backward) {
      rfa::reference::backward(p, q, k, v, dout, rdq, rdk, rdv);
      worst =
          std::max({max_error_bshd(ldq, rdq, positions, 1, S, H, D), max_error_bshd(ldk, rdk, positions, 1, S, H, D),
                    max_error_bshd(ldv, rdv, positions, 1, S, H, D)});
    } else {
      rfa::reference::forward(p, q, k, v, ro, rl);
      worst = max_error_bshd(lout, ro, positions, 1, S, H, D);
      for (int64_t h = 0; h < H; ++h)
        for (int64_t i = 0; i < L; ++i) {
          const double err =
              std::fabs(double(lse[std::size_t(h * L + i)]) - rl[std::size_t(h * S + positions[std::size_t(i)])]);
          worst = std::isnan(err) ? INFINITY : std::max(worst, err);  // std::max would skip a NaN
        }
    }
    char text[32];
    std::snprintf(text, sizeof text, "%.3e", worst);
    error = text;
  }

  rfa_context_destroy(ctx);  // never waits; what a failed call left unfinished is abandoned
  bool canaries_intact = true;
  if (rc != RFA_SUCCESS && a.linger > 0) {
    const std::size_t block = bytes;
    Canaries canaries({block, 2 * block, block / 2, std::size_t(H * L) * sizeof(float)});
    const double until = now() + a.linger;
    while (now() < until) {
      int flag = 0;
      MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
      usleep(1000);
    }
    canaries_intact = canaries.intact();
    untouched = untouched && inputs_untouched();
  }

  std::ostringstream line;
  line.precision(17);
  line << "rank=" << rank << " position=" << position << " host=" << host << " rc=" << code_name(rc)
       << " started=" << started << " returned=" << returned << " inputs=" << (untouched ? "untouched" : "CHANGED")
       << " canaries=" << (canaries_intact ? "intact" : "BROKEN") << " error=" << error << " message=" << message
       << "\n";
  pending.written = true;
  write_verdict(pending.path, line.str());

  if (rc == RFA_SUCCESS) {
    MPI_Finalize();
    return 0;
  }
  // A failed call leaves the job to be ended: the harness does once every verdict is in.
  for (int i = 0; i < 600; ++i) sleep(1);
  return 1;
}
