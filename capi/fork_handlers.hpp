// SPDX-License-Identifier: BSD-3-Clause
// fork() while another thread holds one of rfa's mutexes would leave the child a copy locked
// forever: its first rfa call (a query, rfa_context_destroy, rfa_finalize) would then wait for
// a thread that does not exist there. Handlers registered with pthread_atfork take the mutexes
// such a call takes (the context registry's, the Kokkos lifetime's, the kept-memory list's) in
// the thread that forks, just before the fork, and release them on both sides after it, so a
// fork waits for a holder to leave and the child starts with them free. The others (the
// topology's, the host kernels' dispatch lock) serve only calls a child of fork() is refused.
// None of the three is held while code runs that may fork (Kokkos' initialization and
// finalization run outside the lifetime mutex: capi/kokkos_lifetime.cpp), or the forking thread
// would wait on itself.
#pragma once

namespace rfa {
namespace capi {

/// Registers the handlers, once per process (later calls do nothing). Called before rfa first
/// takes the lifetime mutex: at a context's creation and at rfa_finalize.
void install_fork_handlers();

}  // namespace capi
}  // namespace rfa
