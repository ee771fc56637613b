// SPDX-License-Identifier: BSD-3-Clause
// Compiled for the baseline x86-64 whatever the build's flags (src/CMakeLists.txt: the
// rfa_build_isa_check object library), so that it runs on the CPUs it must refuse.
#include "core/build_isa.hpp"

#include <cstdio>
#include <cstring>

#include "core/error.hpp"

namespace rfa {
namespace {

constexpr const char* kRebuild =
    "which this CPU lacks (the default build targets the CPU it is compiled on: -march=native, "
    "RFA_ENABLE_NATIVE); rebuild rfa on a node like this one, or with -DRFA_ENABLE_NATIVE=OFF for every "
    "x86-64 CPU";

/// Whether this CPU has `feature` (__builtin_cpu_supports' spelling; it takes only literals).
bool cpu_has(const char* feature) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (std::strcmp(feature, "avx2") == 0) return __builtin_cpu_supports("avx2");
  if (std::strcmp(feature, "fma") == 0) return __builtin_cpu_supports("fma");
  if (std::strcmp(feature, "avx512f") == 0) return __builtin_cpu_supports("avx512f");
  if (std::strcmp(feature, "avx512bw") == 0) return __builtin_cpu_supports("avx512bw");
  if (std::strcmp(feature, "avx512dq") == 0) return __builtin_cpu_supports("avx512dq");
  if (std::strcmp(feature, "avx512vl") == 0) return __builtin_cpu_supports("avx512vl");
  if (std::strcmp(feature, "avx512bf16") == 0) return __builtin_cpu_supports("avx512bf16");
#endif
  (void)feature;
  return false;
}

/// The refusal's text, made once: the missing sets and the way out, or "" where none is missing.
struct Refusal {
  char text[512] = {};
};

Refusal find_refusal() {
  Refusal r;
  char missing[256] = {};
  for (const BuildIsaTarget* t = kBuildIsaTargets; t->name != nullptr; ++t) {
    if (cpu_has(t->cpu_feature)) continue;
    if (missing[0] != '\0') std::strncat(missing, ", ", sizeof missing - std::strlen(missing) - 1);
    std::strncat(missing, t->name, sizeof missing - std::strlen(missing) - 1);
  }
  if (missing[0] != '\0')
    std::snprintf(r.text, sizeof r.text, "this librfa was compiled for a CPU with %s, %s", missing, kRebuild);
  return r;
}

}  // namespace

std::vector<BuildIsaFeature> build_isa_features() {
  std::vector<BuildIsaFeature> features;
  for (const BuildIsaTarget* t = kBuildIsaTargets; t->name != nullptr; ++t)
    features.push_back({t->name, cpu_has(t->cpu_feature)});
  return features;
}

std::string missing_build_isa(const std::vector<BuildIsaFeature>& features) {
  std::string missing;
  for (const BuildIsaFeature& f : features)
    if (!f.present) missing += std::string(missing.empty() ? "" : ", ") + f.name;
  if (missing.empty()) return "";
  return "this librfa was compiled for a CPU with " + missing + ", " + kRebuild;
}

const char* build_isa_refusal() noexcept {
  static const Refusal refusal = find_refusal();
  return refusal.text[0] != '\0' ? refusal.text : nullptr;
}

void require_build_isa() {
  if (const char* why = build_isa_refusal()) fail(RFA_ERROR_UNSUPPORTED, why);
}

}  // namespace rfa
