// SPDX-License-Identifier: BSD-3-Clause
// RankKey: what one rank knows about where it runs, in a fixed-size POD so that keys can be
// all-gathered as raw bytes (MPI_Allgather of MPI_BYTE) and compared on every rank alike.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

namespace rfa::topology {

/// Bits of RankKey::flags: where the hardware fields came from.
enum RankKeyFlag : std::uint32_t {
  kKeyFromHwloc = 1u << 0,        ///< numa_node/package/nic were read from an hwloc topology.
  kKeyGpuFound = 1u << 1,         ///< hwloc found the given GPU PCI bus id in the topology.
  kKeyLocalityFromGpu = 1u << 2,  ///< numa_node/package are the GPU's (the CPU binding spans several).
};

/// Layout version of RankKey; gathered keys with another version come from another build.
inline constexpr std::uint32_t kRankKeyVersion = 1;

/// One rank's placement. Strings are NUL-terminated and truncated to fit; the host hash is of
/// the full host name, so two long names that share a truncated prefix still differ.
struct RankKey {
  static constexpr std::size_t kHostCapacity = 64;
  static constexpr std::size_t kPciCapacity = 24;
  static constexpr std::size_t kNicCapacity = 32;
  static constexpr std::size_t kSlurmAddrCapacity = 128;

  std::uint32_t version;                         ///< kRankKeyVersion.
  std::uint32_t flags;                           ///< RankKeyFlag bits.
  std::int32_t rank;                             ///< Rank in the communicator the key was gathered over (-1 before).
  std::int32_t numa_node;                        ///< OS index of the NUMA node of the CPU binding; -1 unknown.
  std::int32_t package;                          ///< OS index of the package (socket) of the CPU binding; -1 unknown.
  std::int32_t reserved;                         ///< Zero; keeps host_hash 8-byte aligned without hidden padding.
  std::uint64_t host_hash;                       ///< FNV-1a of the full host name.
  char host[kHostCapacity];                      ///< Host name (possibly truncated).
  char pci_bus_id[kPciCapacity];                 ///< GPU PCI bus id "dddd:bb:dd.f" (lower case); "" none.
  char nic[kNicCapacity];                        ///< Nearest network device seen by hwloc; "" none.
  char slurm_topology_addr[kSlurmAddrCapacity];  ///< SLURM_TOPOLOGY_ADDR; "" when unset.
};

static_assert(std::is_trivially_copyable<RankKey>::value, "RankKey travels as raw bytes");
static_assert(std::is_standard_layout<RankKey>::value, "RankKey travels as raw bytes");

/// A key with every field empty or unknown (-1), version set, rank -1.
RankKey empty_key();

/// FNV-1a 64-bit hash of a string (stable across builds and machines).
std::uint64_t host_hash(const std::string& host);

/// Copies a string into a fixed field, NUL-terminated, truncated where it must be at the start
/// of a UTF-8 character (a character cut in two would make the JSON dump unreadable).
template <std::size_t N>
void set_field(char (&field)[N], const std::string& value) {
  std::size_t n = value.size() < N - 1 ? value.size() : N - 1;
  if (n < value.size()) {
    while (n > 0 && (static_cast<unsigned char>(value[n]) & 0xc0) == 0x80) --n;  // inside a character
  }
  value.copy(field, n);
  for (std::size_t i = n; i < N; ++i) field[i] = '\0';
}

/// Sets host and host_hash together.
void set_host(RankKey& key, const std::string& host);

/// Two keys are on the same node when host hash and (truncated) host name agree.
bool same_host(const RankKey& a, const RankKey& b);

/// Normalizes a PCI bus id to "dddd:bb:dd.f" in lower case. Accepts what CUDA and NVML print
/// ("0000:3B:00.0", "00000000:3b:00.0") and the short "bb:dd.f". Empty stays empty.
/// Throws rfa::Error(RFA_ERROR_INVALID_ARGUMENT) for anything else.
std::string normalize_pci_bus_id(const std::string& bus_id);

}  // namespace rfa::topology
