// SPDX-License-Identifier: BSD-3-Clause
// Compiled for the baseline x86-64 whatever the build's flags (src/CMakeLists.txt: the
// rfa_core_baseline object library), so that it runs on the CPUs it must refuse.
#include "core/build_isa.hpp"

#include <cstdio>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "core/error.hpp"

namespace rfa {
namespace {

constexpr const char* kRebuild =
    "which this CPU lacks (the default build targets the CPU it is compiled on: -march=native, "
    "RFA_ENABLE_NATIVE); rebuild rfa on a node like this one, or with -DRFA_ENABLE_NATIVE=OFF for every "
    "x86-64 CPU";

/// Bit `bit` of register `reg` (0 EAX .. 3 EDX) of CPUID leaf `leaf`, subleaf `sub`: for the
/// sets __builtin_cpu_supports does not know in every compiler rfa builds with (Clang 14 lacks
/// f16c, movbe, avx512fp16, avxvnni, vaes and lzcnt; GCC 12's lzcnt answers 0 on a CPU that has
/// it). Their registers' state is the OS's AVX or AVX-512 state, which the builtin's avx /
/// avx512f answers (listed beside them) include; lzcnt uses general registers.
bool cpuid_bit(unsigned leaf, unsigned sub, int reg, int bit) {
#if defined(__x86_64__) || defined(__i386__)
  unsigned r[4] = {0, 0, 0, 0};
  if (unsigned(__get_cpuid_max(leaf & 0x80000000u, nullptr)) < leaf) return false;
  __cpuid_count(leaf, sub, r[0], r[1], r[2], r[3]);
  return (r[reg] >> bit) & 1u;
#else
  (void)leaf, (void)sub, (void)reg, (void)bit;
  return false;
#endif
}

/// Whether this CPU has `feature` (__builtin_cpu_supports' spelling; it takes only literals).
bool cpu_has(const char* feature) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  struct Known {
    const char* name;
    bool present;
  };
  const Known known[] = {
      {"sse3", __builtin_cpu_supports("sse3") != 0},
      {"ssse3", __builtin_cpu_supports("ssse3") != 0},
      {"sse4.1", __builtin_cpu_supports("sse4.1") != 0},
      {"sse4.2", __builtin_cpu_supports("sse4.2") != 0},
      {"popcnt", __builtin_cpu_supports("popcnt") != 0},
      {"avx", __builtin_cpu_supports("avx") != 0},
      {"avx2", __builtin_cpu_supports("avx2") != 0},
      {"fma", __builtin_cpu_supports("fma") != 0},
      {"f16c", cpuid_bit(1, 0, 2, 29)},
      {"bmi", __builtin_cpu_supports("bmi") != 0},
      {"bmi2", __builtin_cpu_supports("bmi2") != 0},
      {"movbe", cpuid_bit(1, 0, 2, 22)},
      {"lzcnt", cpuid_bit(0x80000001u, 0, 2, 5)},
      {"avx512f", __builtin_cpu_supports("avx512f") != 0},
      {"avx512cd", __builtin_cpu_supports("avx512cd") != 0},
      {"avx512bw", __builtin_cpu_supports("avx512bw") != 0},
      {"avx512dq", __builtin_cpu_supports("avx512dq") != 0},
      {"avx512vl", __builtin_cpu_supports("avx512vl") != 0},
      {"avx512vbmi", __builtin_cpu_supports("avx512vbmi") != 0},
      {"avx512vbmi2", __builtin_cpu_supports("avx512vbmi2") != 0},
      {"avx512vnni", __builtin_cpu_supports("avx512vnni") != 0},
      {"avx512ifma", __builtin_cpu_supports("avx512ifma") != 0},
      {"avx512bitalg", __builtin_cpu_supports("avx512bitalg") != 0},
      {"avx512vpopcntdq", __builtin_cpu_supports("avx512vpopcntdq") != 0},
      {"avx512fp16", cpuid_bit(7, 0, 3, 23)},
      {"avx512bf16", __builtin_cpu_supports("avx512bf16") != 0},
      {"avxvnni", cpuid_bit(7, 1, 0, 4)},
      {"gfni", __builtin_cpu_supports("gfni") != 0},
      {"vaes", cpuid_bit(7, 0, 2, 9)},
      {"vpclmulqdq", __builtin_cpu_supports("vpclmulqdq") != 0},
  };
  for (const Known& k : known)
    if (std::strcmp(feature, k.name) == 0) return k.present;
#endif
  (void)feature;
  return false;
}

/// The refusal for the sets of `features` this CPU lacks, into `text` ("" where none is missing):
/// plain C, so that the check runs nothing another file might have compiled for the build.
void write_refusal(const BuildIsaFeature* features, std::size_t count, char* text, std::size_t size) {
  char missing[640] = {};
  for (std::size_t i = 0; i < count; ++i) {
    if (features[i].present) continue;
    if (missing[0] != '\0') std::strncat(missing, ", ", sizeof missing - std::strlen(missing) - 1);
    std::strncat(missing, features[i].name, sizeof missing - std::strlen(missing) - 1);
  }
  text[0] = '\0';
  if (missing[0] != '\0')
    std::snprintf(text, size, "this librfa was compiled for a CPU with %s, %s", missing, kRebuild);
}

/// The refusal's text, made once from the build's table and this CPU.
struct Refusal {
  char text[1024] = {};
};

Refusal find_refusal() {
  BuildIsaFeature features[64];
  std::size_t count = 0;
  for (const BuildIsaTarget* t = kBuildIsaTargets; t->name != nullptr && count < 64; ++t)
    features[count++] = {t->name, cpu_has(t->cpu_feature)};
  Refusal r;
  write_refusal(features, count, r.text, sizeof r.text);
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
  char text[1024];
  write_refusal(features.data(), features.size(), text, sizeof text);
  return text;
}

const char* build_isa_refusal() noexcept {
  static const Refusal refusal = find_refusal();
  return refusal.text[0] != '\0' ? refusal.text : nullptr;
}

void require_build_isa() {
  if (const char* why = build_isa_refusal()) fail(RFA_ERROR_UNSUPPORTED, why);
}

}  // namespace rfa
