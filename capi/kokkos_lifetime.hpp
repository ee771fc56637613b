// SPDX-License-Identifier: BSD-3-Clause
// Kokkos is borrowed when the application initialized it and owned otherwise (docs/architecture.md §6.9).
//
// Kokkos 3.4 cannot be initialized again after Kokkos::finalize(), so an owned Kokkos is not
// finalized when the last context goes (a later rfa_context_create would then be impossible)
// but only by rfa_finalize() or, failing that, at program exit.
#pragma once

#include <mutex>

namespace rfa {
namespace capi {

/// Makes sure Kokkos is initialized before a context is built, and counts the context as live.
/// Throws RFA_ERROR_INVALID_USAGE if rfa already finalized the Kokkos it owned (or Kokkos was
/// finalized by the application), RFA_ERROR_KOKKOS if initialization fails.
void acquire_kokkos_for_context();

/// A context was destroyed (or its creation failed after acquire_kokkos_for_context()).
void release_context();

/// rfa_finalize(): finalizes an owned Kokkos; RFA_ERROR_INVALID_USAGE while contexts are live.
void finalize_owned_kokkos();

/// The mutex of the functions above (capi/fork_handlers.cpp takes it across a fork).
std::mutex& kokkos_lifetime_mutex();

}  // namespace capi
}  // namespace rfa
