// SPDX-License-Identifier: BSD-3-Clause
// How long rfa's waits poll MPI without pause before they nap between polls (wait_within's
// spin). A ring step's transfer usually ends within tens of milliseconds, and a rank with a core
// of its own loses nothing by polling for it. Where a node's ranks outnumber its CPUs, a rank
// that polls takes a core from a rank that computes (the scheduler gives each a time slice):
// the ring's ranks with little to compute in a step slowed the ones with much, and the
// contiguous causal ring over four "nodes" on two cores took 20-25% longer than with a spin of
// 0-5 ms. Napping at once instead made the small blocks of the test suites, whose exchanges end
// within a millisecond, up to 8 times slower (perf/RESULTS.md,
// "2026-12-02 (second session) — how long a waiting rank polls").
#pragma once

#include <mpi.h>

#include <chrono>

namespace rfa::collective {

/// The spin of a rank with a core of its own, in milliseconds.
constexpr int kDefaultWaitSpinMs = 50;
/// The spin where a node's ranks outnumber its CPUs: long enough for an exchange of small
/// blocks, short against a step's compute.
constexpr int kSharedCoresWaitSpinMs = 2;

/// The spin of rfa's waits on comm: RFA_WAIT_SPIN_MS where set (each rank its own); else
/// kSharedCoresWaitSpinMs where comm's ranks on this rank's node outnumber the CPUs they may run on together
/// (node_share), else kDefaultWaitSpinMs. Collective over comm, ending by the current deadline;
/// an RFA_WAIT_SPIN_MS that is not a whole number of milliseconds from 0 to 60000 fails every
/// rank with RFA_ERROR_INVALID_ARGUMENT.
std::chrono::milliseconds wait_spin_for(MPI_Comm comm);

}  // namespace rfa::collective
