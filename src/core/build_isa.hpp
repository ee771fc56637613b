// SPDX-License-Identifier: BSD-3-Clause
// The instruction sets this library was compiled to use (-march=native by default,
// RFA_ENABLE_NATIVE), checked against the CPU it runs on: a librfa built on a node with AVX-512
// and run on one without would otherwise stop at an illegal instruction instead of returning
// an error. AMX is not among them: its kernels ask the operating system for the tiles at run
// time and stay off where they are not granted.
//
// The check must run before any code compiled for those instruction sets, so it is compiled
// for the baseline x86-64 (build_isa.cpp, and the C ABI's entry points that call it first,
// targets with the RFA_BASELINE_ISA property), and reads what the build targets from a table of
// constant data compiled with the build's flags (build_isa_targets.cpp).
#pragma once

#include <string>
#include <vector>

namespace rfa {

/// One instruction set the build's flags turn on: its name as vendors spell it ("AVX-512F") and
/// as __builtin_cpu_supports does ("avx512f").
struct BuildIsaTarget {
  const char* name;
  const char* cpu_feature;
};

/// The instruction sets the build targets, ended by {nullptr, nullptr}: constant data (no code
/// runs to make it) from the one file compiled with the build's flags for this purpose.
extern const BuildIsaTarget kBuildIsaTargets[];

/// One instruction set the build uses, and whether this CPU has it.
struct BuildIsaFeature {
  const char* name;  ///< as the CPU's vendors spell it: "AVX-512F"
  bool present;
};

/// The instruction sets the build uses (x86-64; none elsewhere), each with this CPU's answer.
std::vector<BuildIsaFeature> build_isa_features();

/// "" when every feature is present, else the sentence naming those missing and what to do.
std::string missing_build_isa(const std::vector<BuildIsaFeature>& features);

/// Throws RFA_ERROR_UNSUPPORTED with missing_build_isa()'s sentence where this CPU lacks an
/// instruction set the build uses.
void require_build_isa();

/// missing_build_isa()'s sentence where this CPU lacks an instruction set the build uses, else
/// nullptr: found once per process, with no code but the baseline's, so that the C ABI's entry
/// points can ask it first on any x86-64 CPU.
const char* build_isa_refusal() noexcept;

}  // namespace rfa
