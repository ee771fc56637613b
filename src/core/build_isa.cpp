// SPDX-License-Identifier: BSD-3-Clause
#include "core/build_isa.hpp"

#include "core/error.hpp"

namespace rfa {

std::vector<BuildIsaFeature> build_isa_features() {
  std::vector<BuildIsaFeature> features;
  [[maybe_unused]] const auto add = [&](const char* name, int present) { features.push_back({name, present != 0}); };
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
#if defined(__AVX2__)
  add("AVX2", __builtin_cpu_supports("avx2"));
#endif
#if defined(__FMA__)
  add("FMA", __builtin_cpu_supports("fma"));
#endif
#if defined(__AVX512F__)
  add("AVX-512F", __builtin_cpu_supports("avx512f"));
#endif
#if defined(__AVX512BW__)
  add("AVX-512BW", __builtin_cpu_supports("avx512bw"));
#endif
#if defined(__AVX512DQ__)
  add("AVX-512DQ", __builtin_cpu_supports("avx512dq"));
#endif
#if defined(__AVX512VL__)
  add("AVX-512VL", __builtin_cpu_supports("avx512vl"));
#endif
#if defined(__AVX512BF16__)
  add("AVX512-BF16", __builtin_cpu_supports("avx512bf16"));
#endif
#endif
  return features;
}

std::string missing_build_isa(const std::vector<BuildIsaFeature>& features) {
  std::string missing;
  for (const BuildIsaFeature& f : features)
    if (!f.present) missing += std::string(missing.empty() ? "" : ", ") + f.name;
  if (missing.empty()) return "";
  return "this librfa was compiled for a CPU with " + missing +
         ", which this CPU lacks (the default build targets the CPU it is compiled on: -march=native, "
         "RFA_ENABLE_NATIVE); rebuild rfa on a node like this one, or with -DRFA_ENABLE_NATIVE=OFF for every "
         "x86-64 CPU";
}

void require_build_isa() {
  const std::string why = missing_build_isa(build_isa_features());
  if (!why.empty()) fail(RFA_ERROR_UNSUPPORTED, why);
}

}  // namespace rfa
