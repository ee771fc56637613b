// SPDX-License-Identifier: BSD-3-Clause
// Deadlines on rfa's blocking MPI operations (docs/architecture.md §5): every wait
// polls its requests until they complete or the deadline passes, and then fails with
// RFA_ERROR_TIMEOUT instead of hanging the job. What a timeout leaves behind is contained:
// receives are cancelled, sends and collectives are abandoned, and a collective works on a
// buffer that is never freed, so a rank that turns up later cannot write into memory the
// program has reused (the engines set their workspace aside: engine/workspace_arena.hpp).
// After a timeout the communicator is unusable (as after an NCCL abort).
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace rfa::collective {

/// Every deadline inside rfa is a number of seconds in one convention: > 0 the deadline, 0 none,
/// < 0 the environment's (RFA_TIMEOUT_S for MPI's waits, RFA_NCCL_TIMEOUT_S for NCCL's), read
/// where the communicator is made (MpiOptions::timeout_s, NcclOptions::timeout_seconds). The C
/// API's options.timeout_s, where 0 means the environment's and < 0 none, is converted once
/// when a context is created.

/// The default deadline when RFA_TIMEOUT_S is not set, in seconds.
constexpr double kDefaultTimeoutSeconds = 600.0;

/// The deadline in seconds: RFA_TIMEOUT_S when set (a number >= 0; 0 means wait forever), else
/// kDefaultTimeoutSeconds. Throws RFA_ERROR_INVALID_ARGUMENT for any other value.
double timeout_from_environment();

/// `timeout_s` in the convention above, the environment's read where it says so (< 0): the
/// deadline in seconds, 0 for none.
double resolve_timeout(double timeout_s);

/// Completes `count` requests (statuses may be MPI_STATUSES_IGNORE) within `timeout_s`
/// seconds (0: no deadline) and returns MPI_Waitall's code. On timeout: calls `on_timeout`
/// with which requests are complete (done[i] != 0), which must release what it can (cancel
/// receives, free sends) and return a message; then throws RFA_ERROR_TIMEOUT with it. The
/// wait polls without pause for its first `spin` (a ring step's exchange usually ends within
/// 50 ms, and a nap there would add its length to the step; nonblocking collectives progress
/// only while polled), then naps `nap` between polls so that a long wait does not burn a core;
/// a waiter that must leave the cores to others passes a spin of 0 and, where many such waiters
/// share a core and each poll costs (over TCP every poll is a system call on every socket), a
/// longer nap.
int wait_within(MPI_Request* requests, int count, MPI_Status* statuses, double timeout_s,
                const std::function<std::string(const int* done)>& on_timeout,
                std::chrono::milliseconds spin = std::chrono::milliseconds(50),
                std::chrono::microseconds nap = std::chrono::microseconds(200));

/// Bytes of collective buffers this process has left to MPI after timeouts (ParkedValues and
/// the bounded collectives' copies): never freed, since a rank that arrives late can still
/// complete the collective into them. What a run of timeouts costs in memory; the tests hold
/// the abandonment to it.
std::size_t abandoned_collective_bytes();
/// Adds `bytes` to abandoned_collective_bytes(), where such a buffer is left to MPI.
void count_abandoned_collective_bytes(std::size_t bytes);

/// The values a nonblocking collective works on, freed with this object, unless abandon()
/// was called: then they stay with MPI for good (counted in abandoned_collective_bytes()),
/// since a late rank can still complete the collective and write them.
template <class T>
class Parked {
 public:
  explicit Parked(std::vector<T> values) : values_(new std::vector<T>(std::move(values))) {}
  ~Parked() {
    if (!abandoned_) delete values_;
  }
  Parked(const Parked&) = delete;
  Parked& operator=(const Parked&) = delete;

  T* data() { return values_->data(); }
  const std::vector<T>& values() const { return *values_; }
  /// Leaves the values to MPI (their collective timed out).
  void abandon() {
    if (!abandoned_) count_abandoned_collective_bytes(values_->size() * sizeof(T));
    abandoned_ = true;
  }

 private:
  std::vector<T>* values_;
  bool abandoned_ = false;
};

/// The communicator's and creation's agreements park 64-bit values.
using ParkedValues = Parked<std::int64_t>;

/// "5 s", "0.5 s", for messages.
std::string seconds_text(double seconds);

/// The deadline of the bounded collectives (collective/bounded_collectives.hpp) on this thread:
/// the innermost live DeadlineScope's seconds, else timeout_from_environment() (or the default
/// when RFA_TIMEOUT_S is malformed: that is reported where it is read for a context). 0: none.
double current_timeout();

/// Sets current_timeout() on this thread while it lives: rfa_context_create() runs every
/// collective of a creation under the deadline of the options being created.
class DeadlineScope {
 public:
  explicit DeadlineScope(double seconds);
  ~DeadlineScope();
  DeadlineScope(const DeadlineScope&) = delete;
  DeadlineScope& operator=(const DeadlineScope&) = delete;

 private:
  double previous_;
  bool had_previous_;
};

}  // namespace rfa::collective
