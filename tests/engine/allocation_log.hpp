// SPDX-License-Identifier: BSD-3-Clause
// Engine allocations observed through Kokkos' tool hooks: every View allocation is reported,
// and those labelled "rfa::" (the engines' workspaces) are summed while a call runs.
// expect_workspace_kept() checks what an engine keeps between calls against its formula.
#pragma once

#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cstdint>
#include <map>
#include <string>

#include "engine/attention_config.hpp"
#include "kernels/flash_attention.hpp"

namespace rfa {
namespace test {

struct AllocationLog {
  std::int64_t live = 0, peak = 0, largest = 0;
  std::int64_t freed_earlier = 0;  ///< "rfa::" buffers allocated before the log began, freed during it
  std::map<const void*, std::int64_t> sizes;
};

namespace detail {
inline AllocationLog*& current_log() {
  static AllocationLog* log = nullptr;
  return log;
}
inline void on_allocate(Kokkos::Profiling::SpaceHandle, const char* label, const void* ptr, std::uint64_t size) {
  AllocationLog* log = current_log();
  if (!log || std::string(label).rfind("rfa::", 0) != 0) return;
  log->sizes[ptr] = std::int64_t(size);
  log->live += std::int64_t(size);
  log->peak = std::max(log->peak, log->live);
  log->largest = std::max(log->largest, std::int64_t(size));
}
inline void on_deallocate(Kokkos::Profiling::SpaceHandle, const char* label, const void* ptr, std::uint64_t size) {
  AllocationLog* log = current_log();
  if (!log) return;
  auto it = log->sizes.find(ptr);
  if (it == log->sizes.end()) {
    if (std::string(label).rfind("rfa::", 0) == 0) log->freed_earlier += std::int64_t(size);
    return;
  }
  log->live -= it->second;
  log->sizes.erase(it);
}
}  // namespace detail

/// Runs `call` with the hooks installed and returns what the engine allocated during it.
template <class Call>
AllocationLog log_allocations(Call&& call) {
  AllocationLog log;
  Kokkos::Tools::Experimental::set_allocate_data_callback(detail::on_allocate);
  Kokkos::Tools::Experimental::set_deallocate_data_callback(detail::on_deallocate);
  detail::current_log() = &log;
  call();
  detail::current_log() = nullptr;
  Kokkos::Tools::Experimental::set_allocate_data_callback(nullptr);
  Kokkos::Tools::Experimental::set_deallocate_data_callback(nullptr);
  return log;
}

/// One pass (`pass` runs it) of an engine that keeps its host workspace between calls
/// (docs/memory.md), from a released engine on: the first run allocates exactly the formula
/// (workspace_bytes()) at its peak, buffer by buffer, and keeps what held_workspace_bytes()
/// says; the second gathers the buffers into one kept block, as large as the pass's buffers
/// (each rounded up to the arena's alignment), the kernels' copies included; the
/// third allocates nothing else; release_workspace() frees the block.
template <class Engine, class Pass>
void expect_workspace_kept(Engine& engine, bool backward, Pass&& pass) {
  const std::int64_t formula = engine.workspace_bytes(backward);
  engine.release_workspace();
  ASSERT_EQ(engine.held_workspace_bytes(), 0) << "release_workspace() kept memory";
  const AllocationLog first = log_allocations(pass);
  EXPECT_GT(first.peak, 0) << "no allocation observed: are Kokkos tool hooks working?";
  EXPECT_EQ(first.peak, formula) << "allocations differ from the documented formula";
  EXPECT_EQ(first.live, engine.held_workspace_bytes()) << "the engine keeps other memory than it reports";
  pass();
  const std::int64_t held = engine.held_workspace_bytes();
  constexpr std::int64_t kRounding = 64 * 64;  // up to 64 buffers, each rounded up to 64 bytes
  EXPECT_GE(held, formula) << "the kept block cannot hold the pass's buffers";
  EXPECT_LE(held, formula + kRounding) << "the kept block is larger than the pass's buffers";
  const AllocationLog third = log_allocations(pass);
  EXPECT_EQ(third.peak, 0) << "a repeated call allocated buffers it keeps";
  EXPECT_EQ(third.live, 0) << "a repeated call kept more memory";
  EXPECT_EQ(engine.held_workspace_bytes(), held);
  const AllocationLog released = log_allocations([&] { engine.release_workspace(); });
  EXPECT_EQ(released.freed_earlier, held) << "release_workspace() did not free the kept block";
  EXPECT_EQ(engine.held_workspace_bytes(), 0);
}

/// Forward and backward in turn (`forward`, `backward` run them), from a released engine on:
/// the first of each allocates exactly its formula and nothing kept is carved beside it (a
/// block kept from the other pass is freed first); the second pair takes one block for both
/// passes, as large as the larger one's buffers; the third allocates nothing.
template <class Engine, class Forward, class Backward>
void expect_passes_in_turn_kept(Engine& engine, Forward&& forward, Backward&& backward) {
  const std::int64_t formula[2] = {engine.workspace_bytes(false), engine.workspace_bytes(true)};
  const std::int64_t both = std::max(formula[0], formula[1]);
  constexpr std::int64_t kRounding = 64 * 64;  // up to 64 buffers, each rounded up to 64 bytes
  engine.release_workspace();
  std::int64_t second_pair = 0;  // bytes the second forward and backward allocate
  for (int call = 0; call < 6; ++call) {
    const bool back = call % 2 == 1;
    SCOPED_TRACE(std::string("call ") + std::to_string(call + 1) + (back ? ", backward" : ", forward"));
    const std::int64_t held_before = engine.held_workspace_bytes();
    const AllocationLog log = back ? log_allocations(backward) : log_allocations(forward);
    if (call < 2) {
      EXPECT_EQ(log.peak, formula[back]) << "a first pass allocated other than its formula";
      EXPECT_EQ(log.freed_earlier, held_before) << "a first pass kept memory of another beside its own";
    } else if (call < 4) {
      second_pair += log.peak;
    } else {
      EXPECT_EQ(log.peak, 0) << "a repeated pass allocated buffers it keeps";
      EXPECT_EQ(log.freed_earlier, 0) << "a repeated pass freed the kept block";
    }
    if (call == 3) {
      EXPECT_GE(engine.held_workspace_bytes(), both) << "the kept block cannot hold both passes";
      EXPECT_LE(engine.held_workspace_bytes(), both + kRounding) << "the kept block is larger than a pass needs";
      EXPECT_LE(second_pair, both + kRounding) << "more than one block for both passes";
    }
  }
}

}  // namespace test
}  // namespace rfa
