#include "kokkos_lifetime.hpp"

#include <Kokkos_Core.hpp>
#include <cstdlib>
#include <exception>
#include <mutex>

#include "core/error.hpp"
#include "firewall.hpp"

namespace rfa {
namespace capi {
namespace {

enum class Ownership { none_yet, borrowed, owned, finalized_by_rfa };

std::mutex lifetime_mutex;
Ownership ownership = Ownership::none_yet;
int live_contexts = 0;

bool kokkos_finalized_already() {
#if KOKKOS_VERSION >= 30700
  return Kokkos::is_finalized();
#else
  return false;  // Kokkos 3.4 cannot tell; Kokkos::initialize() would then fail loudly.
#endif
}

// At exit, an owned Kokkos is finalized so that its own end-of-run checks run; contexts the
// application forgot hold no Kokkos allocation between calls, so this is safe with them alive.
void finalize_at_exit() {
  std::lock_guard<std::mutex> lock(lifetime_mutex);
  if (ownership == Ownership::owned && Kokkos::is_initialized()) {
    Kokkos::finalize();
    ownership = Ownership::finalized_by_rfa;
  }
}

}  // namespace

void acquire_kokkos_for_context() {
  std::lock_guard<std::mutex> lock(lifetime_mutex);
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
    try {
      int argc = 0;
      char* no_args[] = {nullptr};
      Kokkos::initialize(argc, no_args);
    } catch (const std::exception& e) {
      fail(RFA_ERROR_KOKKOS, "Kokkos::initialize failed: ", e.what());
    }
    if (ownership == Ownership::none_yet) std::atexit(finalize_at_exit);
    ownership = Ownership::owned;
  } else if (ownership == Ownership::none_yet) {
    ownership = Ownership::borrowed;
  }
  ++live_contexts;
}

void release_context() {
  std::lock_guard<std::mutex> lock(lifetime_mutex);
  if (live_contexts > 0) --live_contexts;
}

void finalize_owned_kokkos() {
  std::lock_guard<std::mutex> lock(lifetime_mutex);
  if (ownership != Ownership::owned) return;
  if (live_contexts > 0) {
    fail(RFA_ERROR_INVALID_USAGE, live_contexts,
         " context(s) are still alive; destroy them with rfa_context_destroy() before rfa_finalize()");
  }
  if (Kokkos::is_initialized()) Kokkos::finalize();
  ownership = Ownership::finalized_by_rfa;
}

}  // namespace capi
}  // namespace rfa

extern "C" RFA_API rfa_result_t rfa_finalize(void) {
  return rfa::capi::guard(__func__, [] {
    rfa::capi::finalize_owned_kokkos();
    return RFA_SUCCESS;
  });
}
