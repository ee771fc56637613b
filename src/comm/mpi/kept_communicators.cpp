// SPDX-License-Identifier: BSD-3-Clause
#include "comm/mpi/kept_communicators.hpp"

#include <atomic>
#include <cstddef>

#include "core/environment.hpp"
#include "core/error.hpp"

namespace rfa::comm::mpi {

namespace {

std::atomic<std::size_t> kept{0};

constexpr long kLargestLimit = 1000000;

std::size_t most_kept_communicators() {
  const char* text = env_value(Env::max_kept_communicators);
  if (text == nullptr || *text == '\0') return kDefaultMostKeptCommunicators;
  long long value = 0;
  if (!parse_whole_number(text, 1, kLargestLimit, &value)) {
    fail(RFA_ERROR_INVALID_ARGUMENT, env_name(Env::max_kept_communicators), " is '", text,
         "'; it must be a whole number of communicators from 1 to ", kLargestLimit);
  }
  return std::size_t(value);
}

}  // namespace

void count_kept_communicator() noexcept { kept.fetch_add(1, std::memory_order_relaxed); }

std::size_t kept_communicators() noexcept { return kept.load(std::memory_order_relaxed); }

void require_room_for_communicators(const char* call) {
  const std::size_t most = most_kept_communicators();
  const std::size_t now = kept_communicators();
  if (now < most) return;
  fail(RFA_ERROR_INVALID_USAGE, call, ": this process keeps ", now,
       " MPI communicators of calls that timed out (MPI may still use them, so they are never freed) and creates "
       "no context past ",
       most, " (", env_name(Env::max_kept_communicators),
       "): MPI holds a limited number of communicators, and a rank that could not make one more would leave the "
       "others blocked in MPI. End the job (MPI_Abort) and start it again");
}

}  // namespace rfa::comm::mpi
