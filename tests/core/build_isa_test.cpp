// SPDX-License-Identifier: BSD-3-Clause
// src/core/build_isa: the instruction sets the build uses are the compiler's (each one it
// targets listed, none it does not), this CPU (which compiled the build) has them all, and a
// CPU lacking one is told which and what to do.
#include "core/build_isa.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.hpp"

namespace rfa {
namespace {

bool listed(const std::vector<BuildIsaFeature>& features, const std::string& name) {
  for (const BuildIsaFeature& f : features)
    if (name == f.name) return true;
  return false;
}

TEST(BuildIsa, ListsWhatTheCompilerTargets) {
  const std::vector<BuildIsaFeature> features = build_isa_features();
#if defined(__x86_64__) && defined(__AVX2__)
  EXPECT_TRUE(listed(features, "AVX2"));
#else
  EXPECT_FALSE(listed(features, "AVX2"));
#endif
#if defined(__x86_64__) && defined(__AVX512F__)
  EXPECT_TRUE(listed(features, "AVX-512F"));
#else
  EXPECT_FALSE(listed(features, "AVX-512F"));
#endif
#if defined(__x86_64__) && defined(__AVX512BF16__)
  EXPECT_TRUE(listed(features, "AVX512-BF16"));
#else
  EXPECT_FALSE(listed(features, "AVX512-BF16"));
#endif
}

TEST(BuildIsa, TheCpuThatRunsTheTestsHasThem) {
  for (const BuildIsaFeature& f : build_isa_features()) EXPECT_TRUE(f.present) << f.name;
  EXPECT_NO_THROW(require_build_isa());
}

TEST(BuildIsa, AMissingSetIsNamedWithTheWayOut) {
  EXPECT_EQ(missing_build_isa({}), "");
  EXPECT_EQ(missing_build_isa({{"AVX2", true}, {"AVX-512F", true}}), "");
  const std::string one = missing_build_isa({{"AVX2", true}, {"AVX-512F", false}});
  EXPECT_NE(one.find("compiled for a CPU with AVX-512F, which this CPU lacks"), std::string::npos) << one;
  EXPECT_NE(one.find("-DRFA_ENABLE_NATIVE=OFF"), std::string::npos) << one;
  const std::string two = missing_build_isa({{"AVX-512F", false}, {"AVX512-BF16", false}, {"FMA", true}});
  EXPECT_NE(two.find("with AVX-512F, AVX512-BF16, which"), std::string::npos) << two;
}

}  // namespace
}  // namespace rfa
