// SPDX-License-Identifier: BSD-3-Clause
// The peer benchmark (PyTorch's kernel, torch_cpu_peer.py) as a child process that rfa's
// benchmark talks to in lines: it either prints its figures and exits (one run per round), or
// stays up and answers one timed call per request, so that rfa's calls and the peer's can
// alternate one by one and a slow spell of a shared machine falls on both sides of a ratio.
#pragma once

#include <sys/types.h>

#include <csignal>
#include <cstdio>
#include <optional>
#include <string>

namespace rfa {
namespace perf {

class PeerProcess {
 public:
  /// Starts `command` with /bin/sh, its standard input and output connected to this process
  /// (its standard error is the caller's to redirect in `command`). The child starts with every
  /// CPU in its affinity: OpenMP's binding (OMP_PROC_BIND) may have narrowed this thread's to
  /// one core, and the peer must get as many cores as it has threads.
  explicit PeerProcess(const std::string& command);
  /// Closes the peer's input (a serving peer exits at end of input) and waits for it.
  ~PeerProcess();
  PeerProcess(const PeerProcess&) = delete;
  PeerProcess& operator=(const PeerProcess&) = delete;

  /// Whether the child was started (fork and pipes succeeded).
  bool started() const { return pid_ > 0; }
  /// One line of the peer's output without its newline; nothing once it has closed its output
  /// (exited, or could not start).
  std::optional<std::string> read_line();
  /// Sends `request` as one line and reads the answer; nothing when the peer has gone.
  std::optional<std::string> ask(const std::string& request);

 private:
  void close_pipes();

  pid_t pid_ = -1;
  std::FILE* to_peer_ = nullptr;
  std::FILE* from_peer_ = nullptr;
  // Writing to a peer that has exited raises SIGPIPE, which would end the benchmark: ignored
  // while a peer runs, the previous disposition restored afterwards.
  struct sigaction previous_sigpipe_ {};
  bool sigpipe_saved_ = false;
};

}  // namespace perf
}  // namespace rfa
