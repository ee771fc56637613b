// SPDX-License-Identifier: BSD-3-Clause
// cpu_peak.hpp compiled for baseline x86-64 (no AVX: this file's compile options,
// perf/common/CMakeLists.txt) in every build whose C++ compiler makes x86-64 host code,
// whatever the build itself targets: a build without -march=native (RFA_ENABLE_NATIVE=OFF, as
// packagers build) compiles the 8-lane chains' register constraint this way. Compiled, never
// linked into a program.
#include "cpu_peak.hpp"

#if defined(__AVX__)
#error "cpu_peak_baseline_check.cpp must be compiled for baseline x86-64 (-march=x86-64)"
#endif

namespace rfa::perf {

/// Makes the compiler emit the measurement's code, so the check covers the asm it contains.
double cpu_peak_baseline_check() { return measure_fp32_fma_peak(); }

}  // namespace rfa::perf
