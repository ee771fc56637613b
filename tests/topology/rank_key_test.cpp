// SPDX-License-Identifier: BSD-3-Clause
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "core/error.hpp"
#include "topology/rank_key.hpp"

namespace rfa::topology {
namespace {

TEST(RankKey, EmptyKeyKnowsNothing) {
  const RankKey key = empty_key();
  EXPECT_EQ(key.version, kRankKeyVersion);
  EXPECT_EQ(key.rank, -1);
  EXPECT_EQ(key.numa_node, -1);
  EXPECT_EQ(key.package, -1);
  EXPECT_STREQ(key.host, "");
  EXPECT_STREQ(key.pci_bus_id, "");
}

TEST(RankKey, FieldsTruncateAndTerminate) {
  RankKey key = empty_key();
  set_field(key.nic, std::string(100, 'n'));
  EXPECT_EQ(std::strlen(key.nic), RankKey::kNicCapacity - 1);
  set_field(key.nic, "ib0");
  EXPECT_STREQ(key.nic, "ib0");
  for (std::size_t i = 3; i < RankKey::kNicCapacity; ++i) EXPECT_EQ(key.nic[i], '\0') << i;
  // A two-byte UTF-8 character across the field's end is left out whole, not cut in two.
  const std::size_t room = RankKey::kNicCapacity - 1;
  const std::string accented = std::string(room - 1, 'n') + "\xc3\xa9";  // ends in an e-acute
  set_field(key.nic, accented);
  EXPECT_EQ(std::string(key.nic), std::string(room - 1, 'n'));
  set_field(key.nic, std::string(room - 2, 'n') + "\xc3\xa9");  // fits whole
  EXPECT_EQ(std::strlen(key.nic), room);
}

TEST(RankKey, HostHashIsFnv1aOfTheFullName) {
  EXPECT_EQ(host_hash(""), 14695981039346656037ull);
  EXPECT_EQ(host_hash("a"), 0xaf63dc4c8601ec8cull);  // published FNV-1a 64 test vector
  RankKey a = empty_key(), b = empty_key();
  set_host(a, "node1");
  set_host(b, "node1");
  EXPECT_TRUE(same_host(a, b));
  set_host(b, "node01");
  EXPECT_FALSE(same_host(a, b));
}

TEST(RankKey, PciBusIdsNormalize) {
  EXPECT_EQ(normalize_pci_bus_id(""), "");
  EXPECT_EQ(normalize_pci_bus_id("0000:3B:00.0"), "0000:3b:00.0");      // cudaDeviceGetPCIBusId
  EXPECT_EQ(normalize_pci_bus_id("00000000:3B:00.0"), "0000:3b:00.0");  // nvidia-smi / NVML
  EXPECT_EQ(normalize_pci_bus_id("3b:00.0"), "0000:3b:00.0");
  EXPECT_EQ(normalize_pci_bus_id("0001:c1:1f.7"), "0001:c1:1f.7");
}

TEST(RankKey, MalformedPciBusIdsAreInvalidArguments) {
  for (const char* bad : {"gpu0", "0000:3b:00", "0000:3b:00.0 ", "0000:3b:00.8", "0000:3b:20.0", "0000:100:00.0",
                          "-1:3b:00.0", "0x0:3b:00.0", "0000:3b:00.0x"}) {
    try {
      normalize_pci_bus_id(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const rfa::Error& e) {
      EXPECT_EQ(e.code(), RFA_ERROR_INVALID_ARGUMENT) << bad;
      EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace rfa::topology
