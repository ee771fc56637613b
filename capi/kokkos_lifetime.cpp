// SPDX-License-Identifier: BSD-3-Clause
#include "kokkos_lifetime.hpp"

#include <unistd.h>
#include <Kokkos_Core.hpp>

#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "firewall.hpp"
#include "fork_handlers.hpp"

namespace rfa {
namespace capi {
namespace {

enum class Ownership { none_yet, borrowed, owned, finalized_by_rfa };

// The state below is read and changed under lifetime_mutex, which is never held while Kokkos
// initializes or finalizes: Kokkos runs code of its own there (Kokkos Tools' callbacks, the
// hooks of Kokkos::push_finalize_hook, a device's start), which may fork, and the fork
// handlers take this mutex (capi/fork_handlers.hpp). A thread that initializes or finalizes
// marks it `changing` and the others wait on `changed` for it to end.
std::mutex lifetime_mutex;
std::condition_variable changed;
Ownership ownership = Ownership::none_yet;
int live_contexts = 0;
/// The process that initialized the Kokkos rfa owns: a fork of it (a child of fork()) leaves that
/// Kokkos, and the device state under it, to the parent, and never finalizes it.
pid_t owner = 0;
/// The process whose thread is initializing or finalizing Kokkos now (0: none). In a fork taken
/// meanwhile no thread of the child does so, and nothing there waits for it.
pid_t changing = 0;

/// Waits, holding `lock`, until no thread of this process initializes or finalizes Kokkos.
void wait_while_changing(std::unique_lock<std::mutex>& lock) {
  changed.wait(lock, [] { return changing != getpid(); });
}

/// Marks this process's change of Kokkos for its scope, with lifetime_mutex released; on
/// leaving, takes the mutex again, ends the mark and wakes the waiting threads.
class ChangingKokkos {
 public:
  explicit ChangingKokkos(std::unique_lock<std::mutex>& lock) : lock_(lock) {
    changing = getpid();
    lock_.unlock();
  }
  ~ChangingKokkos() {
    lock_.lock();
    changing = 0;
    changed.notify_all();
  }
  ChangingKokkos(const ChangingKokkos&) = delete;
  ChangingKokkos& operator=(const ChangingKokkos&) = delete;

 private:
  std::unique_lock<std::mutex>& lock_;
};

bool kokkos_finalized_already() {
#if KOKKOS_VERSION >= 30700
  return Kokkos::is_finalized();
#else
  return false;  // Kokkos 3.4 cannot tell; Kokkos::initialize() would then fail loudly.
#endif
}

// The arguments rfa initializes Kokkos with. A CUDA-enabled Kokkos would pick its own GPU
// (device 0, or one by MPI rank) and abort the process when there is none; rfa's rule is the
// caller's current device (docs/architecture.md §5), and no GPU must be an error code.
std::vector<std::string> kokkos_arguments() {
  std::vector<std::string> args{"rfa"};
#if defined(KOKKOS_ENABLE_CUDA)
  int device = -1, count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0 || cudaGetDevice(&device) != cudaSuccess) {
    cudaGetLastError();
    fail(RFA_ERROR_CUDA,
         "this rfa is built against a CUDA-enabled Kokkos, which needs a usable CUDA device to "
         "initialize, and this rank has none (no GPU, no driver, or CUDA_VISIBLE_DEVICES hides them)");
  }
  args.push_back("--kokkos-device-id=" + std::to_string(device));
#endif
  return args;
}

// At exit, an owned Kokkos is finalized so that its own end-of-run checks run. Contexts the
// application forgot to destroy still hold Views (the workspace kept between calls, a CUDA
// context's device copies); nothing frees them after this point, unless an exit handler that
// runs later destroys a context, whose Views Kokkos may then refuse to free.
void finalize_at_exit() {
  std::unique_lock<std::mutex> lock(lifetime_mutex);
  wait_while_changing(lock);
  if (ownership == Ownership::owned && owner == getpid() && Kokkos::is_initialized()) {
    ownership = Ownership::finalized_by_rfa;
    const ChangingKokkos change(lock);
    Kokkos::finalize();
  }
}

}  // namespace

std::mutex& kokkos_lifetime_mutex() { return lifetime_mutex; }

void acquire_kokkos_for_context() {
  install_fork_handlers();  // before this process first takes one of their mutexes
  std::unique_lock<std::mutex> lock(lifetime_mutex);
  wait_while_changing(lock);
  if (ownership == Ownership::finalized_by_rfa) {
    fail(RFA_ERROR_INVALID_USAGE,
         "rfa_finalize() already finalized the Kokkos runtime rfa had initialized, and Kokkos cannot be "
         "initialized again; create every context before rfa_finalize(), or initialize Kokkos in the "
         "application");
  }
  if (!Kokkos::is_initialized()) {
    if (ownership == Ownership::borrowed || kokkos_finalized_already()) {
      fail(RFA_ERROR_INVALID_USAGE,
           "the application finalized Kokkos; rfa cannot initialize it again (destroy every context before "
           "Kokkos::finalize())");
    }
    {
      const ChangingKokkos change(lock);
      std::vector<std::string> args = kokkos_arguments();
      try {
        std::vector<char*> argv;
        for (std::string& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        int argc = int(args.size());
        Kokkos::initialize(argc, argv.data());
      } catch (const std::exception& e) {
        fail(RFA_ERROR_KOKKOS, "Kokkos::initialize failed: ", e.what());
      }
    }
    if (ownership == Ownership::none_yet) std::atexit(finalize_at_exit);
    ownership = Ownership::owned;
    owner = getpid();
  } else if (ownership == Ownership::none_yet) {
    ownership = Ownership::borrowed;
  }
  ++live_contexts;
}

void release_context() {
  const std::lock_guard<std::mutex> lock(lifetime_mutex);
  if (live_contexts > 0) --live_contexts;
}

void finalize_owned_kokkos() {
  install_fork_handlers();
  std::unique_lock<std::mutex> lock(lifetime_mutex);
  wait_while_changing(lock);
  if (ownership != Ownership::owned || owner != getpid()) return;
  if (live_contexts > 0) {
    fail(RFA_ERROR_INVALID_USAGE, live_contexts,
         " context(s) are still alive; destroy them with rfa_context_destroy() before rfa_finalize()");
  }
  ownership = Ownership::finalized_by_rfa;
  if (Kokkos::is_initialized()) {
    const ChangingKokkos change(lock);
    Kokkos::finalize();
  }
}

}  // namespace capi
}  // namespace rfa

extern "C" RFA_API rfa_result_t rfa_finalize(void) {
  return rfa::capi::guard(__func__, [] {
    rfa::capi::finalize_owned_kokkos();
    return RFA_SUCCESS;
  });
}
