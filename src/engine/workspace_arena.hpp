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
// Each call names its kind (the engine's forward, backward, ...). A kind not seen before (the
// first forward, the first backward) allocates a block of its own per buffer, each labelled with
// the buffer's name (what Kokkos' tools and an out-of-memory message name), freed at the end of
// the call; a kind seen before starts with one block as large as the largest kind, allocated
// afresh when the kept one is smaller than the kind needs. So a call never holds more than the
// larger of its own buffers and what is already kept (a kept block too small would be carved
// first and the rest allocated beside it), and once every kind has run once, one block serves
// every call. A call made inside another on the same arena (the hybrid's inner ring) carves on
// after the outer call's buffers and counts as part of it. A call that fails or unwinds with an
// exception leaves nothing allocated, but for one whose transport abandoned transfers (a
// timeout, Communicator::has_abandoned_transfers): a late rank may still write into its
// buffers, so they are set aside for the life of the process instead of freed. release()
// gives everything back.
#pragma once

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "core/allocation.hpp"
#include "core/kept_for_process.hpp"

namespace rfa {
namespace engine {

template <class Space>
class WorkspaceArena {
 public:
  /// Buffers start at multiples of this many bytes (a cache line; the host kernels' vectors).
  static constexpr std::int64_t kAlignment = 64;

  /// A communicator whose transfers write into this arena's buffers (each engine's own, the
  /// hybrid's groups and its inner ring's); it must outlive the calls made on the arena.
  void watch(const comm::Communicator* transport) { watched_.watch(transport); }
  /// Whether a watched transport abandoned transfers (comm::Communicator::has_abandoned_transfers).
  bool transfers_abandoned() const { return watched_.abandoned(); }

  /// Begins a call of kind `pass`; inside a call already begun, a part of that call.
  void begin_call(int pass) {
    if (depth_++ > 0) return;
    inner_failed_ = false;
    pass_ = pass;
    call_bytes_ = 0;
    const auto known = totals_.find(pass);
    if (known == totals_.end()) {
      blocks_.clear();  // its buffers one by one, freed at its end
      want_ = 0;
      return;
    }
    if (!blocks_.empty() && capacity(blocks_.front()) < known->second) blocks_.clear();
    want_ = 0;
    for (const auto& entry : totals_) want_ = std::max(want_, entry.second);
  }

  /// `bytes` for buffer `name` of the current call. Throws RFA_ERROR_OUT_OF_MEMORY (name, bytes)
  /// when the allocator refuses.
  unsigned char* take(const std::string& name, std::int64_t bytes) {
    if (bytes <= 0) return nullptr;
    const std::int64_t size = (bytes + kAlignment - 1) / kAlignment * kAlignment;
    if (blocks_.empty() || blocks_.back().used + size > capacity(blocks_.back())) {
      // The kept size serves a known kind's first buffer; past it a buffer gets its own block.
      const std::int64_t want = blocks_.empty() ? std::max(want_, bytes) : bytes;
      blocks_.push_back({allocate_bytes<Space>(want == bytes ? name : std::string("rfa::workspace"), want), 0});
    }
    Block& b = blocks_.back();
    unsigned char* p = b.memory.data() + b.used;
    b.used = std::min(capacity(b), b.used + size);
    call_bytes_ += size;
    return p;
  }

  /// Ends the call. `failed`: it did not complete (a refused allocation, an exception), and
  /// everything is freed, or set aside where its transfers were abandoned.
  void end_call(bool failed) {
    if (--depth_ > 0) {
      inner_failed_ = inner_failed_ || failed;
      return;
    }
    if (failed || inner_failed_) {
      if (watched_.abandoned())
        set_aside();
      else
        blocks_.clear();
    } else {
      std::int64_t& total = totals_[pass_];
      total = std::max(total, call_bytes_);
      if (blocks_.size() > 1) blocks_.clear();  // the next call takes one block of the largest kind
      for (Block& b : blocks_) b.used = 0;
    }
    call_bytes_ = 0;
  }

  /// Frees what is kept and forgets the kinds: the next call allocates as the first one did.
  void release() {
    blocks_.clear();
    totals_.clear();
    want_ = 0;
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

  /// Keeps the blocks for the life of the process (keep_for_process), then forgets the kinds
  /// as release() does: the context is unusable after a timeout anyway.
  void set_aside() {
    for (Block& b : blocks_) keep_for_process(std::move(b.memory));
    release();
  }

  std::vector<Block> blocks_;
  std::map<int, std::int64_t> totals_;  // each kind's buffers, each rounded to kAlignment
  std::int64_t want_ = 0;               // the block a call starts with (0: none)
  std::int64_t call_bytes_ = 0;         // this call's buffers so far
  int pass_ = 0;
  int depth_ = 0;              // calls begun and not ended: more than 1 inside another
  bool inner_failed_ = false;  // a call inside this one failed
  comm::WatchedTransports watched_;
};

}  // namespace engine
}  // namespace rfa
