// SPDX-License-Identifier: BSD-3-Clause
#include "peer_process.hpp"

#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <thread>

namespace rfa {
namespace perf {

PeerProcess::PeerProcess(const std::string& command) {
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigpipe_saved_ = sigaction(SIGPIPE, &ignore, &previous_sigpipe_) == 0;

  int in[2], out[2];  // in: this process -> peer's stdin; out: peer's stdout -> this process
  if (pipe(in) != 0) return;
  if (pipe(out) != 0) {
    ::close(in[0]);
    ::close(in[1]);
    return;
  }
  cpu_set_t bound, all;
  const bool have_mask = sched_getaffinity(0, sizeof bound, &bound) == 0;
  CPU_ZERO(&all);
  for (unsigned c = 0; c < std::thread::hardware_concurrency() && c < CPU_SETSIZE; ++c) CPU_SET(c, &all);
  if (have_mask) sched_setaffinity(0, sizeof all, &all);
  pid_ = fork();
  if (pid_ == 0) {
    dup2(in[0], STDIN_FILENO);
    dup2(out[1], STDOUT_FILENO);
    for (int fd : {in[0], in[1], out[0], out[1]}) ::close(fd);
    signal(SIGPIPE, SIG_DFL);
    execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  if (have_mask) sched_setaffinity(0, sizeof bound, &bound);
  ::close(in[0]);
  ::close(out[1]);
  if (pid_ < 0) {
    ::close(in[1]);
    ::close(out[0]);
    return;
  }
  to_peer_ = fdopen(in[1], "w");
  from_peer_ = fdopen(out[0], "r");
  if (!to_peer_ || !from_peer_) {
    if (!to_peer_) ::close(in[1]);
    if (!from_peer_) ::close(out[0]);
    close_pipes();
  }
}

void PeerProcess::close_pipes() {
  if (to_peer_) std::fclose(to_peer_);
  if (from_peer_) std::fclose(from_peer_);
  to_peer_ = from_peer_ = nullptr;
}

PeerProcess::~PeerProcess() {
  close_pipes();
  if (pid_ > 0) {
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
  if (sigpipe_saved_) sigaction(SIGPIPE, &previous_sigpipe_, nullptr);
}

std::optional<std::string> PeerProcess::read_line() {
  if (!from_peer_) return std::nullopt;
  std::string line;
  char chunk[512];
  while (std::fgets(chunk, sizeof chunk, from_peer_)) {
    line += chunk;
    if (!line.empty() && line.back() == '\n') {
      line.pop_back();
      return line;
    }
  }
  if (line.empty()) return std::nullopt;
  return line;  // the last line, without a newline
}

std::optional<std::string> PeerProcess::ask(const std::string& request) {
  if (!to_peer_) return std::nullopt;
  if (std::fprintf(to_peer_, "%s\n", request.c_str()) < 0 || std::fflush(to_peer_) != 0) return std::nullopt;
  return read_line();
}

}  // namespace perf
}  // namespace rfa
