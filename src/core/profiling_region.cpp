// SPDX-License-Identifier: BSD-3-Clause
#include "core/profiling_region.hpp"

#include <Kokkos_Core.hpp>

namespace rfa {

ProfilingRegion::ProfilingRegion(const std::string& name) { Kokkos::Profiling::pushRegion(name); }

ProfilingRegion::~ProfilingRegion() { Kokkos::Profiling::popRegion(); }

std::string ring_step_region(const char* pass, int step) {
  return std::string("rfa ring ") + pass + " step " + std::to_string(step);
}

}  // namespace rfa
