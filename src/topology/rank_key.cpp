// SPDX-License-Identifier: BSD-3-Clause
#include "topology/rank_key.hpp"

#include <cctype>
#include <cstdio>
#include <cstring>

#include "core/error.hpp"

namespace rfa::topology {

RankKey empty_key() {
  RankKey key;
  std::memset(&key, 0, sizeof key);  // zero padding too: keys are compared and dumped as bytes
  key.version = kRankKeyVersion;
  key.rank = -1;
  key.numa_node = -1;
  key.package = -1;
  return key;
}

std::uint64_t host_hash(const std::string& host) {
  std::uint64_t h = 14695981039346656037ull;
  for (unsigned char c : host) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

void set_host(RankKey& key, const std::string& host) {
  set_field(key.host, host);
  key.host_hash = host_hash(host);
}

bool same_host(const RankKey& a, const RankKey& b) {
  return a.host_hash == b.host_hash && std::strncmp(a.host, b.host, RankKey::kHostCapacity) == 0;
}

std::string normalize_pci_bus_id(const std::string& bus_id) {
  if (bus_id.empty()) return bus_id;
  unsigned domain = 0, bus = 0, device = 0, function = 0;
  int consumed = 0;
  const char* s = bus_id.c_str();
  bool parsed = std::sscanf(s, "%x:%x:%x.%x%n", &domain, &bus, &device, &function, &consumed) == 4;
  if (!parsed) {
    domain = 0;
    parsed = std::sscanf(s, "%x:%x.%x%n", &bus, &device, &function, &consumed) == 3;
  }
  // sscanf's %x also takes signs and "0x"; insist on hex digits and separators only.
  bool plain = true;
  for (char c : bus_id) plain = plain && (std::isxdigit(static_cast<unsigned char>(c)) || c == ':' || c == '.');
  require(parsed && plain && consumed == static_cast<int>(bus_id.size()) && domain <= 0xffffu && bus <= 0xffu &&
              device <= 0x1fu && function <= 0x7u,
          "rfa topology: '", bus_id, "' is not a PCI bus id (expected dddd:bb:dd.f, e.g. 0000:3b:00.0)");
  char out[RankKey::kPciCapacity];
  std::snprintf(out, sizeof out, "%04x:%02x:%02x.%x", domain, bus, device, function);
  return out;
}

}  // namespace rfa::topology
