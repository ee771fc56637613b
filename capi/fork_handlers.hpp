// SPDX-License-Identifier: BSD-3-Clause
// fork() while another thread holds one of rfa's mutexes would leave the child a copy locked
// forever: its first rfa call (a query, rfa_context_destroy, rfa_finalize) would then wait for
// a thread that does not exist there. Handlers registered with pthread_atfork take those
// mutexes in the thread that forks, just before the fork, and release them on both sides after
// it, so a fork waits for a holder to leave and the child starts with every one of them free.
#pragma once

namespace rfa {
namespace capi {

/// Registers the handlers, once per process (later calls do nothing). Called when the first
/// context is registered: until then a fork's child has no context to release.
void install_fork_handlers();

}  // namespace capi
}  // namespace rfa
