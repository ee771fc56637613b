// SPDX-License-Identifier: BSD-3-Clause
// The instruction sets this library was compiled to use (-march=native by default,
// RFA_ENABLE_NATIVE), checked against the CPU it runs on: a librfa built on a node with AVX-512
// and run on one without would otherwise stop at an illegal instruction instead of returning
// an error. AMX is not among them: its kernels ask the operating system for the tiles at run
// time and stay off where they are not granted.
#pragma once

#include <string>
#include <vector>

namespace rfa {

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

}  // namespace rfa
