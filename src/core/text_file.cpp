// SPDX-License-Identifier: BSD-3-Clause
#include "core/text_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.hpp"

namespace rfa {
namespace {

/// Closes a descriptor when it goes out of scope.
struct Descriptor {
  int fd;
  ~Descriptor() {
    if (fd >= 0) ::close(fd);
  }
};

/// Back to blocking reads and writes once open: a FIFO with a peer then waits for its data as
/// a pipe does.
void make_blocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
}

}  // namespace

std::string read_text_file(const std::string& path, std::size_t max_bytes, const std::string& what) {
  // O_NONBLOCK: opening a FIFO for reading does not wait for a writer.
  const Descriptor file{::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC)};
  if (file.fd < 0) fail(RFA_ERROR_INVALID_ARGUMENT, what, ": cannot read '", path, "': ", std::strerror(errno));
  struct stat st {};
  if (::fstat(file.fd, &st) == 0 && S_ISDIR(st.st_mode))
    fail(RFA_ERROR_INVALID_ARGUMENT, what, ": '", path, "' is a directory, not a file");
  make_blocking(file.fd);
  std::string text;
  char chunk[4096];
  for (;;) {
    const ssize_t n = ::read(file.fd, chunk, sizeof chunk);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      fail(RFA_ERROR_INVALID_ARGUMENT, what, ": cannot read '", path, "': ", std::strerror(errno));
    }
    if (text.size() + std::size_t(n) > max_bytes)
      fail(RFA_ERROR_INVALID_ARGUMENT, what, ": '", path, "' is longer than ", max_bytes, " bytes");
    text.append(chunk, std::size_t(n));
  }
  return text;
}

void write_text_file(const std::string& path, const std::string& text, const std::string& what) {
  // O_NONBLOCK: opening a FIFO nobody reads fails (ENXIO) instead of waiting for a reader.
  const Descriptor file{::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NONBLOCK | O_CLOEXEC, 0644)};
  if (file.fd < 0) fail(RFA_ERROR_INVALID_ARGUMENT, what, ": cannot write '", path, "': ", std::strerror(errno));
  make_blocking(file.fd);
  std::size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = ::write(file.fd, text.data() + written, text.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail(RFA_ERROR_INVALID_ARGUMENT, what, ": cannot write '", path, "': ", std::strerror(errno));
    }
    written += std::size_t(n);
  }
}

}  // namespace rfa
