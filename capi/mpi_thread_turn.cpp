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

MpiThreadTurn::MpiThreadTurn(const char* call) {
  if (turns_held > 0) {
    ++turns_held;
    held_ = true;
    return;
  }
  if (!mpi_is_running()) return;  // the call itself says what is wrong, with no MPI call
  int level = MPI_THREAD_MULTIPLE;
  if (MPI_Query_thread(&level) != MPI_SUCCESS || level >= MPI_THREAD_MULTIPLE) return;
  if (level < MPI_THREAD_SERIALIZED) {
    int main_thread = 0;
    MPI_Is_thread_main(&main_thread);
    if (!main_thread) {
      fail(RFA_ERROR_INVALID_USAGE, call,
           " uses MPI, and this is not the thread that initialized MPI, which MPI's thread level (", level_name(level),
           ") requires: call rfa from that thread, or initialize MPI with MPI_Init_thread at "
           "MPI_THREAD_SERIALIZED (one thread at a time) or MPI_THREAD_MULTIPLE; nothing was sent");
    }
  }
  const char* other = nullptr;
  if (!call_inside.compare_exchange_strong(other, call)) {
    fail(RFA_ERROR_INVALID_USAGE, call, " uses MPI while another thread of this process is inside ", other,
         ", and MPI's thread level (", level_name(level),
         ") allows one thread in MPI at a time: serialize the calls, or initialize MPI with MPI_Init_thread at "
         "MPI_THREAD_MULTIPLE to use different contexts from different threads; nothing was sent");
  }
  turns_held = 1;
  held_ = true;
}

MpiThreadTurn::~MpiThreadTurn() {
  if (!held_) return;
  if (--turns_held == 0) call_inside.store(nullptr);
}

}  // namespace capi
}  // namespace rfa
