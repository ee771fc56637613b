// SPDX-License-Identifier: BSD-3-Clause
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "grouping_locale.hpp"
#include "key_builders.hpp"
#include "topology/ring_order.hpp"
#include "topology/topo_json.hpp"

namespace rfa::topology {
namespace {

using testing::numbered;
using testing::synthetic_key;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(TopoJson, DumpsPolicyOrderKeysAndEdges) {
  RingOrder ring;
  ring.keys = numbered({synthetic_key("node2", 0, 0, "0000:1a:00.0"), synthetic_key("node1", 1, 1)});
  ring.order = {1, 0};
  ring.policy_used = RFA_RING_ORDER_TOPOLOGY;
  const std::string json = to_json(ring);
  EXPECT_TRUE(contains(json, "\"policy\": \"topology\"")) << json;
  EXPECT_TRUE(contains(json, "\"order\": [1, 0]")) << json;
  EXPECT_TRUE(contains(json, "\"size\": 2")) << json;
  EXPECT_TRUE(contains(json, "\"host\": \"node2\"")) << json;
  EXPECT_TRUE(contains(json, "\"pci_bus_id\": \"0000:1a:00.0\"")) << json;
  EXPECT_TRUE(contains(json, "\"chosen\": {\"inter_node\": 2")) << json;
}

TEST(TopoJson, EscapesStrings) {
  RingOrder ring;
  ring.keys = numbered({synthetic_key("we\"ird\\host\n")});
  ring.order = {0};
  const std::string json = to_json(ring);
  EXPECT_TRUE(contains(json, "\"host\": \"we\\\"ird\\\\host\\u000a\"")) << json;
}

// A host program's global locale groups thousands: the dump's counts and the hexadecimal host
// hash are written as JSON still (1000, not 1.000; no separator inside the hash).
TEST(TopoJson, NumbersIgnoreTheProgramsLocale) {
  std::vector<RankKey> keys;
  for (int r = 0; r < 1001; ++r) keys.push_back(synthetic_key("node" + std::to_string(r % 2), 0, 0));
  RingOrder ring;
  ring.keys = numbered(keys);
  ring.keys.back().host_hash = 0x8cf3707b570dbecULL;
  for (int r = 0; r < 1001; ++r) ring.order.push_back(r);
  const rfa::test::GlobalGroupingLocale grouping;
  const std::string json = to_json(ring);
  EXPECT_TRUE(contains(json, "\"size\": 1001,")) << json.substr(0, 200);
  EXPECT_TRUE(contains(json, "\"rank\": 1000,")) << json.substr(json.size() - 600);
  EXPECT_TRUE(contains(json, "\"host_hash\": \"8cf3707b570dbec\"")) << json.substr(json.size() - 600);
  EXPECT_TRUE(contains(json, ", 999, 1000]")) << json.substr(0, 200);
}

}  // namespace
}  // namespace rfa::topology
