// SPDX-License-Identifier: BSD-3-Clause
// Which ring order to use: the caller's rfa_ring_order_t, refined by RFA_RING_ORDER, and the
// text of an order file. Pure functions; the collective wrappers live in choose_ring_order.cpp.
#pragma once

#include <string>
#include <vector>

#include "rfa/rfa.h"

namespace rfa::topology {

/// A resolved policy: never DEFAULT; file is set exactly when policy is FILE.
struct PolicyChoice {
  rfa_ring_order_t policy = RFA_RING_ORDER_TOPOLOGY;
  std::string file;
};

/// Resolves the requested policy against the value of RFA_RING_ORDER ("" when unset):
///  - DEFAULT: the variable decides (identity, topo or topology, file:PATH); unset or empty
///    means topology.
///  - IDENTITY, TOPOLOGY: the variable is ignored.
///  - FILE: explicit_file if given, else the PATH of RFA_RING_ORDER=file:PATH.
/// Throws RFA_ERROR_INVALID_ARGUMENT for an unknown policy or variable value, and for FILE
/// without a path. The same inputs give the same result on every rank.
PolicyChoice resolve_policy(rfa_ring_order_t requested, const std::string& env_value,
                            const std::string& explicit_file = "");

/// "default", "identity", "topology", "file" (or "unknown").
const char* policy_name(rfa_ring_order_t policy);

/// Parses an order file: one rank per line, in ring order; blank lines and text after '#' are
/// ignored. Throws RFA_ERROR_INVALID_ARGUMENT, naming the source and the line, unless the
/// ranks are a permutation of 0..size-1.
std::vector<int> parse_order_text(const std::string& text, int size, const std::string& source);

/// The whole order file (core/text_file.hpp: a FIFO without a writer reads as empty, at most
/// 64 MiB); throws RFA_ERROR_INVALID_ARGUMENT when it cannot be read.
std::string order_file_text(const std::string& path);

}  // namespace rfa::topology
