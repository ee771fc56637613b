// SPDX-License-Identifier: BSD-3-Clause
#include "collective/wait_spin.hpp"

#include "collective/agree_on_failure.hpp"
#include "collective/node_cpus.hpp"
#include "core/environment.hpp"
#include "core/error.hpp"

namespace rfa::collective {

namespace {

/// RFA_WAIT_SPIN_MS in milliseconds, or -1 where it is unset.
long spin_from_environment() {
  const char* text = env_value(Env::wait_spin_ms);
  if (text == nullptr || *text == '\0') return -1;
  long long value = 0;
  if (!parse_whole_number(text, 0, 60000, &value)) {
    fail(RFA_ERROR_INVALID_ARGUMENT, "RFA_WAIT_SPIN_MS is '", text,
         "'; it must be a whole number of milliseconds from 0 to 60000");
  }
  return static_cast<long>(value);
}

}  // namespace

std::chrono::milliseconds wait_spin_for(MPI_Comm comm) {
  long spin = -1;
  agree_on_failure(comm, [&] { spin = spin_from_environment(); });
  // Asked on every rank alike (a collective over the node), whatever the variable says.
  const NodeShare node = node_share(comm, "rfa: the node's ranks and CPUs, for how long a wait polls");
  if (spin >= 0) return std::chrono::milliseconds(spin);
  return std::chrono::milliseconds(node.ranks > node.cpus ? kSharedCoresWaitSpinMs : kDefaultWaitSpinMs);
}

}  // namespace rfa::collective
