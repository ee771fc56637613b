// SPDX-License-Identifier: BSD-3-Clause
// The host memory an engine keeps from one call to the next (docs/memory.md). A call's buffers
// are carved, in the order it asks for them, from one block as large as the largest call so
// far; the block stays with the engine, so the next call neither allocates nor touches fresh
// pages. Allocating per call and freeing at its end let the C library hand the pages back to
// the system and fault them in again on every call: on a VM that cost Ulysses' forward 10%,
// its windowed passes 17-23% and the ring's windowed backward 14% (perf/RESULTS.md,
// "2026-11-27 (late night) — host workspace kept between calls; the model with ranks that
// share a core").
//
// A call the block cannot hold (the first one, or one larger than any before) gets a block of
// its own per buffer, each labelled with the buffer's name (what Kokkos' tools and an
// out-of-memory message name); at the end of such a call they are freed and the next call
// takes one block of the whole call's size. A call that fails or unwinds with an exception
// leaves nothing allocated. release() gives everything back.
#pragma once

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "core/allocation.hpp"

namespace rfa {
namespace engine {

template <class Space>
class WorkspaceArena {
 public:
  /// Buffers start at multiples of this many bytes (a cache line; the host kernels' vectors).
  static constexpr std::int64_t kAlignment = 64;

  /// `bytes` for buffer `name` of the current call. Throws RFA_ERROR_OUT_OF_MEMORY (name, bytes)
  /// when the allocator refuses.
  unsigned char* take(const std::string& name, std::int64_t bytes) {
    if (bytes <= 0) return nullptr;
    const std::int64_t size = (bytes + kAlignment - 1) / kAlignment * kAlignment;
    if (blocks_.empty() || blocks_.back().used + size > capacity(blocks_.back())) {
      // The kept size serves the first buffer of a call; a buffer past it gets its own block.
      const std::int64_t want = blocks_.empty() ? std::max(kept_, bytes) : bytes;
      blocks_.push_back({allocate_bytes<Space>(want == bytes ? name : std::string("rfa::workspace"), want), 0});
    }
    Block& b = blocks_.back();
    unsigned char* p = b.memory.data() + b.used;
    b.used = std::min(capacity(b), b.used + size);
    call_bytes_ += size;
    return p;
  }

  /// Ends a call's use of the buffers. `failed`: the call did not complete (a refused
  /// allocation, an exception), and everything is freed.
  void end_call(bool failed) {
    if (failed) {
      blocks_.clear();
    } else if (blocks_.size() > 1) {
      kept_ = std::max(kept_, call_bytes_);
      blocks_.clear();
    } else if (!blocks_.empty()) {
      kept_ = std::max(kept_, capacity(blocks_.front()));
      blocks_.front().used = 0;
    }
    call_bytes_ = 0;
  }

  /// Frees what is kept; the next call allocates as the first one did.
  void release() {
    blocks_.clear();
    kept_ = 0;
    call_bytes_ = 0;
  }

  /// Bytes allocated and kept between calls.
  std::int64_t held_bytes() const {
    std::int64_t n = 0;
    for (const Block& b : blocks_) n += capacity(b);
    return n;
  }

 private:
  struct Block {
    Kokkos::View<unsigned char*, Space> memory;
    std::int64_t used = 0;
  };
  static std::int64_t capacity(const Block& b) { return std::int64_t(b.memory.extent(0)); }

  std::vector<Block> blocks_;
  std::int64_t kept_ = 0;        // the block size the next call starts with
  std::int64_t call_bytes_ = 0;  // this call's buffers, each rounded to kAlignment
};

}  // namespace engine
}  // namespace rfa
