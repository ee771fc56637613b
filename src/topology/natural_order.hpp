// SPDX-License-Identifier: BSD-3-Clause
// Natural ("human") string order: digit runs compare as numbers, so "node2" < "node10".
#pragma once

#include <string>

namespace rfa::topology {

/// Strict weak order: runs of decimal digits compare by value, everything else by character.
/// Names equal under that rule ("node01", "node1") fall back to plain string order, so the
/// order is total and every rank sorts the same way.
bool natural_less(const std::string& a, const std::string& b);

}  // namespace rfa::topology
