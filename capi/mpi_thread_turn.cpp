// SPDX-License-Identifier: BSD-3-Clause
#include "mpi_thread_turn.hpp"

#include <mpi.h>

#include <atomic>

#include "collective_call.hpp"
#include "core/error.hpp"

namespace rfa {
namespace capi {
namespace {

// The call a thread is inside, where MPI's level allows one thread at a time; nullptr when none.
std::atomic<const char*> call_inside{nullptr};
// How many turns this thread holds (a call made inside another).
thread_local int turns_held = 0;

const char* level_name(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE: return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
    default: return "MPI_THREAD_MULTIPLE";
  }
}

}  // namespace

MpiThreadTurn::Refusal MpiThreadTurn::take(const char* call, int& level, const char*& other) noexcept {
  if (turns_held > 0) {
    ++turns_held;
    held_ = true;
    return Refusal::none;
  }
  if (!mpi_is_running()) return Refusal::none;  // the call itself says what is wrong, with no MPI call
  level = MPI_THREAD_MULTIPLE;
  if (MPI_Query_thread(&level) != MPI_SUCCESS || level >= MPI_THREAD_MULTIPLE) return Refusal::none;
  if (level < MPI_THREAD_SERIALIZED) {
    int main_thread = 0;
    MPI_Is_thread_main(&main_thread);
    if (!main_thread) return Refusal::not_main_thread;
  }
  other = nullptr;
  if (!call_inside.compare_exchange_strong(other, call)) return Refusal::another_inside;
  turns_held = 1;
  held_ = true;
  return Refusal::none;
}

MpiThreadTurn::MpiThreadTurn(const char* call) {
  int level = MPI_THREAD_MULTIPLE;
  const char* other = nullptr;
  switch (take(call, level, other)) {
    case Refusal::none: return;
    case Refusal::not_main_thread:
      fail(RFA_ERROR_INVALID_USAGE, call,
           " uses MPI, and this is not the thread that initialized MPI, which MPI's thread level (", level_name(level),
           ") requires: call rfa from that thread, or initialize MPI with MPI_Init_thread at "
           "MPI_THREAD_SERIALIZED (one thread at a time) or MPI_THREAD_MULTIPLE; nothing was sent");
    case Refusal::another_inside:
      fail(RFA_ERROR_INVALID_USAGE, call, " uses MPI while another thread of this process is inside ", other,
           ", and MPI's thread level (", level_name(level),
           ") allows one thread in MPI at a time: serialize the calls, or initialize MPI with MPI_Init_thread at "
           "MPI_THREAD_MULTIPLE to use different contexts from different threads; nothing was sent");
  }
}

MpiThreadTurn::MpiThreadTurn(const char* call, std::nothrow_t) noexcept {
  int level = MPI_THREAD_MULTIPLE;
  const char* other = nullptr;
  refused_ = take(call, level, other) != Refusal::none;
}

MpiThreadTurn::~MpiThreadTurn() {
  if (!held_) return;
  if (--turns_held == 0) call_inside.store(nullptr);
}

}  // namespace capi
}  // namespace rfa
