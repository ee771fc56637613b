// SPDX-License-Identifier: BSD-3-Clause
// A Kokkos profiling region for the lifetime of an object (Kokkos::Profiling::pushRegion and
// popRegion), so that kokkos-tools (the space-time stack, the NVTX and ROCTX connectors behind
// Nsight Systems and rocprof) show rfa's phases: one region per C API call ("rfa_forward", ...)
// and one per ring step ("rfa ring forward step 2"). Without a tool loaded a region costs a test
// of Kokkos' callback pointer.
#pragma once

#include <string>

namespace rfa {

class ProfilingRegion {
 public:
  explicit ProfilingRegion(const std::string& name);
  ~ProfilingRegion();
  ProfilingRegion(const ProfilingRegion&) = delete;
  ProfilingRegion& operator=(const ProfilingRegion&) = delete;
};

/// "rfa ring forward step 3": the region of ring step `step` of a `pass` ("forward", "backward").
std::string ring_step_region(const char* pass, int step);

}  // namespace rfa
