// SPDX-License-Identifier: BSD-3-Clause
// The CPU model a result file records (perf/common/machine_context), from /proc/cpuinfo's text:
// x86's "model name"; an Arm core's implementer, part, variant and revision (it has no model
// name, and two Arm machines must not read as one to the comparator); "unknown" where neither
// is there; a key that only begins another key's name is not taken for it.
#include <gtest/gtest.h>

#include <string>

#include "machine_context.hpp"

namespace {

using rfa::perf::cpu_model_from;

TEST(CpuModel, X86ModelName) {
  const std::string text =
      "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel\t\t: 143\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\n";
  EXPECT_EQ(cpu_model_from(text), "Intel(R) Xeon(R) Platinum 8480+");
}

TEST(CpuModel, ArmCoresByImplementerAndPart) {
  const std::string neoverse_v2 =
      "processor\t: 0\nBogoMIPS\t: 2000.00\nCPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x0\n"
      "CPU part\t: 0xd4f\nCPU revision\t: 0\n";
  const std::string neoverse_n1 =
      "processor\t: 0\nCPU implementer\t: 0x41\nCPU variant\t: 0x3\nCPU part\t: 0xd0c\nCPU revision\t: 1\n";
  EXPECT_EQ(cpu_model_from(neoverse_v2), "arm implementer 0x41 part 0xd4f variant 0x0 revision 0");
  EXPECT_NE(cpu_model_from(neoverse_v2), cpu_model_from(neoverse_n1));
}

TEST(CpuModel, UnknownWithoutEitherAndNoPrefixMatches) {
  EXPECT_EQ(cpu_model_from(""), "unknown");
  EXPECT_EQ(cpu_model_from("processor\t: 0\nmodel\t\t: 143\n"), "unknown");
  EXPECT_EQ(cpu_model_from("model name extra\t: not this\nmodel name\t: this\n"), "this");
}

}  // namespace
