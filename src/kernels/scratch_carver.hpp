// SPDX-License-Identifier: BSD-3-Clause
// Hands out consecutive, cache-line aligned pieces of one team-scratch block. A kernel carves
// its buffers twice with the same code: once without a block, to count the bytes it must ask
// Kokkos for, and once in the real block, so the size and the layout cannot disagree.
#pragma once

#include <Kokkos_Core.hpp>
#include <cstddef>
#include <cstdint>

namespace rfa {
namespace kernels {

/// Floats between rows of the n-wide fp32 scratch tiles of the host kernels (n = d, or a tile's
/// rows or keys for the score tiles): n plus one 64-byte line, so that for the kernels' widths
/// rows are an odd number of lines apart and a column strip of a tile spreads over all L1 sets.
KOKKOS_INLINE_FUNCTION constexpr int row_pitch(int n) { return n + 16; }
/// Whether rows `pitch` floats apart are an odd number of whole 64-byte lines apart.
KOKKOS_INLINE_FUNCTION constexpr bool odd_lines(int pitch) { return pitch % 16 == 0 && (pitch / 16) % 2 == 1; }

class ScratchCarver {
 public:
  /// base == nullptr: only count.
  KOKKOS_INLINE_FUNCTION explicit ScratchCarver(void* base) : base_(static_cast<char*>(base)) {}

  template <class T>
  KOKKOS_INLINE_FUNCTION T* take(std::size_t count) {
    // Align the address itself (the block's start may be less aligned): the real pass then
    // uses at most kAlignment bytes more than the counting pass, which bytes() adds.
    const std::uintptr_t start = reinterpret_cast<std::uintptr_t>(base_);
    offset_ = ((start + offset_ + kAlignment - 1) & ~std::uintptr_t(kAlignment - 1)) - start;
    T* piece = base_ ? reinterpret_cast<T*>(base_ + offset_) : nullptr;
    offset_ += count * sizeof(T);
    return piece;
  }

  /// Bytes to request so that every piece fits whatever the block's own alignment.
  KOKKOS_INLINE_FUNCTION std::size_t bytes() const { return offset_ + kAlignment; }

 private:
  static constexpr std::size_t kAlignment = 64;
  char* base_;
  std::size_t offset_ = 0;
};

/// Bytes of team scratch for a kernel whose static `Scratch carve(ScratchCarver&, dims...)` lays
/// out its buffers (dims: its head dims).
template <class Kernel, class... Dims>
std::size_t scratch_bytes(Dims... dims) {
  ScratchCarver counter(nullptr);
  Kernel::carve(counter, dims...);
  return counter.bytes();
}

/// The kernel's buffers inside the calling team's level-1 scratch block.
template <class Kernel, class Member, class... Dims>
typename Kernel::Scratch carve_team_scratch(const Member& team, Dims... dims) {
  ScratchCarver c(team.team_scratch(1).get_shmem(scratch_bytes<Kernel>(dims...)));
  return Kernel::carve(c, dims...);
}

}  // namespace kernels
}  // namespace rfa
