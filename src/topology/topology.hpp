// SPDX-License-Identifier: BSD-3-Clause
// rfa::topology: topology-aware ring order (docs/architecture.md §5). One include for callers.
#pragma once

#include "rfa/rfa_config.h"
#include "topology/local_key.hpp"
#include "topology/natural_order.hpp"
#include "topology/order_policy.hpp"
#include "topology/rank_key.hpp"
#include "topology/ring_order.hpp"
#include "topology/simulated_placement.hpp"
#include "topology/topo_json.hpp"
#if RFA_HAVE_MPI
#include "topology/choose_ring_order.hpp"
#include "topology/gather_keys.hpp"
#endif
