// SPDX-License-Identifier: BSD-3-Clause
#include "fork_handlers.hpp"

#include <pthread.h>

#include <mutex>

#include "context.hpp"
#include "core/kept_for_process.hpp"
#include "kokkos_lifetime.hpp"

namespace rfa {
namespace capi {
namespace {

// The mutexes a child of fork() may take: the registry's (every call on a handle), the Kokkos
// lifetime's (rfa_context_destroy and rfa_finalize) and the kept-memory list's (destroy in a
// fork keeps the copy). No code holds one of them while it takes another, so any order is
// free of deadlock; the handlers take them in this one and release them in reverse.
void lock_before_fork() {
  kokkos_lifetime_mutex().lock();
  context_registry_mutex().lock();
  kept_for_process_mutex().lock();
}

void unlock_after_fork() {
  kept_for_process_mutex().unlock();
  context_registry_mutex().unlock();
  kokkos_lifetime_mutex().unlock();
}

}  // namespace

void install_fork_handlers() {
  static std::once_flag installed;
  std::call_once(installed, [] {
    if (pthread_atfork(lock_before_fork, unlock_after_fork, unlock_after_fork) != 0) {
      fail(RFA_ERROR_OUT_OF_MEMORY, "pthread_atfork could not register rfa's fork handlers (no memory)");
    }
  });
}

}  // namespace capi
}  // namespace rfa
